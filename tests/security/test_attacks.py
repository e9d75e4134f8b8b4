"""Attacks a task or a policy could make from inside a sandbox. Each must fail.

Every test checks the effect from the host (files, processes, sockets, memory) as well as what
the command saw, so removing the protection it is named after makes it fail.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
import time
from pathlib import Path

import pytest

import sandbox
from sandbox import SandboxError


def _host_procs_with(token: str) -> list[str]:
    """Command lines of host processes containing `token` (sandboxed ones are host processes)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if token in cmd and "pytest" not in cmd:
            found.append(f"{pid}: {cmd}")
    return found


def _wait_gone(token: str, seconds: float = 3.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := _host_procs_with(token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_write_outside_workspace(sb: sandbox.Sandbox) -> None:
    """The root is the sandbox's own (bwrap: copy-on-write root dir and /etc; docker: tmpfs dirs):
    writes there may succeed inside, /usr stays read-only, and nothing reaches the host."""
    marker = f"clawloop-escape-{secrets.token_hex(4)}"
    r = sb.exec(f"""
        for f in /etc/{marker} /usr/{marker} /usr/bin/{marker} /{marker}; do
            echo x > "$f" 2>/dev/null && echo "WROTE $f"
        done
        echo x > /tmp/{marker} && echo x > /root/{marker} && echo private-ok
    """)
    assert "WROTE /usr" not in r.output, r.output
    assert "private-ok" in r.output, r.output  # the sandbox's own /tmp and /root are writable
    # Nothing reached the host: not its /etc, /usr, /tmp or home.
    for host in (Path("/etc"), Path("/usr"), Path("/usr/bin"), Path("/tmp"), Path.home(), Path("/")):
        assert not (host / marker).exists(), host / marker
    for path in (f"/etc/{marker}", f"/usr/bin/{marker}"):
        with pytest.raises(SandboxError):
            sb.write_file(path, "x")
    sb.exec(f"rm -f /tmp/{marker} /root/{marker} /{marker} /etc/{marker}")


def test_read_secret_in_host_home(sb: sandbox.Sandbox, host_secret: tuple[Path, str]) -> None:
    path, value = host_secret
    r = sb.exec(f"cat {path} {Path('/root') / path.name} 2>&1; "
                f"grep -rs {value} /root /home /tmp /workspace /srv /logs 2>/dev/null; true")
    assert value not in r.output
    listing = sb.exec(f"ls -a {path.parent} /root /home 2>&1").output
    assert path.name not in listing, listing


def test_host_environment_invisible(sb: sandbox.Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    value = "HOSTENV-" + secrets.token_hex(8)
    monkeypatch.setenv("CLAWLOOP_TEST_HOST_SECRET", value)
    # /proc/*/environ too: bwrap's own init keeps the environment bwrap was started with.
    r = sb.exec("env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'")
    assert "PATH=" in r.output
    assert value not in r.output
    assert "CLAWLOOP_TEST_HOST_SECRET" not in r.output


def test_host_loopback_listener_unreachable(sb: sandbox.Sandbox) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        r = sb.exec(f"timeout 5 bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>&1 && echo CONNECTED "
                    "|| echo BLOCKED", timeout=20)
    finally:
        stop.set()
        t.join()
        server.close()
    assert "BLOCKED" in r.output and "CONNECTED" not in r.output, r.output
    assert not accepted


def _host_nameserver() -> str:
    try:
        for line in Path("/etc/resolv.conf").read_text().splitlines():
            if line.startswith("nameserver") and "." in line:
                return line.split()[1]
    except OSError:
        pass
    return "8.8.8.8"


def test_dns_and_network_fail(sb: sandbox.Sandbox) -> None:
    ns = _host_nameserver()
    # A UDP connect only needs a route: it succeeds wherever the host's network is shared.
    r = sb.exec(f"""python3 - <<'EOF'
import socket
try:
    socket.getaddrinfo("deb.debian.org", 80)
    print("RESOLVED")
except OSError as e:
    print("no-dns", e)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.connect(("{ns}", 53))
    s.send(b"x")
    print("ROUTED")
except OSError as e:
    print("no-route", e)
EOF""", timeout=30)
    assert "no-dns" in r.output and "no-route" in r.output, r.output
    assert "RESOLVED" not in r.output and "ROUTED" not in r.output


def test_no_process_outlives_its_command(sb: sandbox.Sandbox) -> None:
    token = f"{secrets.randbelow(10**6) + 10**6}"
    r = sb.exec(f"""
        setsid sleep {token}.1 &
        nohup sleep {token}.2 >/dev/null 2>&1 &
        (sleep {token}.3 &) &
        (setsid bash -c 'sleep {token}.4 & exit' &)
        disown -a
        sleep 0.3; echo started
    """, timeout=20)
    assert "started" in r.output
    assert _wait_gone(token) == []
    assert token not in sb.exec("ps -eo args 2>/dev/null || ls /proc").output


def test_timeout_kills_the_whole_tree(sb: sandbox.Sandbox) -> None:
    token = f"{secrets.randbelow(10**6) + 10**6}"
    t0 = time.monotonic()
    r = sb.exec(f"setsid sleep {token}.1 & (sleep {token}.2 &); sleep {token}.3", timeout=1)
    assert r.timed_out and r.exit_code == 124
    assert time.monotonic() - t0 < 8
    assert _wait_gone(token) == []


def test_process_limit(sb: sandbox.Sandbox) -> None:
    token = f"{secrets.randbelow(10**6) + 10**6}"
    r = sb.exec(f"""python3 - <<'EOF'
import subprocess
procs, err = [], None
for _ in range(300):
    try:
        procs.append(subprocess.Popen(["sleep", "{token}"]))
    except OSError as e:
        err = e
        break
print("SPAWNED", len(procs), err)
EOF""", timeout=30)
    assert "SPAWNED" in r.output, r.output
    spawned = int(r.output.split("SPAWNED")[1].split()[0])
    assert spawned <= sb.config.max_processes + 8, r.output
    assert _wait_gone(token) == []


def test_memory_limit(sb: sandbox.Sandbox) -> None:
    # 1 GiB, actually written, against a 512 MiB limit.
    r = sb.exec("python3 -c 'x = b\"x\" * (1 << 30); print(\"ALLOCATED\", len(x))'", timeout=30)
    assert "ALLOCATED" not in r.output, r.output
    assert r.exit_code != 0


def test_file_size_limit(sb: sandbox.Sandbox) -> None:
    r = sb.exec("head -c 32M /dev/zero > /workspace/big; echo rc=$?; stat -c %s /workspace/big", timeout=30)
    size = int(r.output.strip().splitlines()[-1])
    assert size <= sb.config.max_file_size_mb << 20, r.output
    assert "rc=0" not in r.output
    sb.exec("rm -f /workspace/big")


def test_cpu_limit(sb: sandbox.Sandbox) -> None:
    t0 = time.monotonic()
    r = sb.exec("python3 -c 'while True: pass'", timeout=30)
    # SIGXCPU at cpu_seconds (152), SIGKILL a second later (137) if it is caught.
    assert not r.timed_out and r.exit_code in (128 + 24, 128 + 9), r
    assert time.monotonic() - t0 < 20


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_output_flood_is_truncated_in_bounded_memory(sb: sandbox.Sandbox) -> None:
    base, peak, done = _rss_mb(), [0.0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mb())
            time.sleep(0.005)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        r = sb.exec("head -c 100000000 /dev/zero | tr '\\0' a; echo; echo THE-END", timeout=60)
    finally:
        done.set()
        t.join()
    assert r.exit_code == 0 and r.truncated
    assert len(r.output) <= sb.config.output_limit + 200
    assert r.output.rstrip().endswith("THE-END")
    assert peak[0] - base < 50, f"host RSS grew by {peak[0] - base:.0f} MiB"


def test_symlink_to_host_file_not_followed_by_read_file(sb: sandbox.Sandbox,
                                                       host_secret: tuple[Path, str]) -> None:
    path, value = host_secret
    depth = "../" * 12
    sb.exec(f"ln -sf {path} /workspace/abs; ln -sf {depth}{str(path).lstrip('/')} /workspace/rel; "
            "ln -sf /etc/shadow /workspace/shadow; ln -sf /proc/1/root/etc/hostname /workspace/proc; "
            f"mkdir -p /workspace/d && ln -sfn {path.parent} /workspace/d/home")
    for link in ("/workspace/abs", "/workspace/rel", "/workspace/shadow", "/workspace/proc",
                 f"/workspace/d/home/{path.name}"):
        try:
            data = sb.read_file(link)
        except (SandboxError, FileNotFoundError):
            continue
        assert value.encode() not in data, link
        # The docker image has its own /etc/shadow; never the host's.
        assert data != _read_or_none(Path("/etc/shadow")), link
    # Writing through a symlink stays inside the sandbox too.
    target = Path("/tmp") / f"clawloop-host-{secrets.token_hex(4)}"
    sb.exec(f"ln -sf {target} /workspace/out")
    with contextlib.suppress(SandboxError):
        sb.write_file("/workspace/out", "pwned")
    assert not target.exists()
    sb.exec("rm -rf /workspace/abs /workspace/rel /workspace/shadow /workspace/proc /workspace/d /workspace/out")


def test_exec_server_cannot_be_taken_over(sb: sandbox.Sandbox, backend: str) -> None:
    """bwrap's exec server (pid 1, same uid as the commands) outlives every command: a command
    that could ptrace it, read its memory or kill it would outlive itself, or break the next."""
    if backend != "bwrap":
        pytest.skip("only bwrap keeps a process of its own inside between commands")
    before = sb.exec("cut -d' ' -f22 /proc/1/stat").output  # pid 1's start time
    r = sb.exec("""python3 - <<'EOF'
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
print("ptrace", libc.ptrace(16, 1, 0, 0), ctypes.get_errno())  # PTRACE_ATTACH
for path in ("/proc/1/mem", "/proc/1/environ", "/proc/1/fd/0"):
    try:
        with open(path, "rb") as f:
            f.read(1)
        print("READ", path)
    except OSError as e:
        print("denied", path, e.errno)
for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGSTOP):
    os.kill(1, sig)
print("done")
EOF""", timeout=30)
    assert "ptrace -1" in r.output and "done" in r.output, r.output
    assert "READ" not in r.output, r.output
    # Still the same pid 1, and it still runs commands.
    assert sb.exec("cut -d' ' -f22 /proc/1/stat").output == before
