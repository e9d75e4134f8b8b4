"""The sandbox API, the same for the isolated backends (docker skips when unavailable).

`local` cannot pass most of these (commands see the host's real /workspace, /tests...): it has
its own tests at the end.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import sandbox
from clawloop.core.runtime import runtime_dir
from sandbox import SandboxError

unavailable = functools.cache(sandbox.unavailable_reason)


@pytest.fixture(scope="module", params=sandbox.ISOLATED_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    why = unavailable(request.param)
    if why:
        pytest.skip(why)
    return request.param


@pytest.fixture(scope="module")
def sb(backend: str) -> Iterator[sandbox.Sandbox]:
    with sandbox.open(backend, runtime_dir=runtime_dir(), output_limit=1000) as box:
        yield box


def test_unknown_backend_is_one_line_error() -> None:
    with pytest.raises(SandboxError, match="unknown sandbox backend 'nope'") as e, sandbox.open("nope"):
        pass
    assert "\n" not in str(e.value)


def test_bad_config_is_sandbox_error() -> None:
    with pytest.raises(SandboxError, match="memory_mb"):
        sandbox.create("local", memory_mb=0)
    with pytest.raises(SandboxError, match="workspace"):
        sandbox.create("local", workspace="/usr/ws")


def test_exit_codes_and_output(sb: sandbox.Sandbox) -> None:
    r = sb.exec("echo out; echo err >&2; exit 3")
    assert r.exit_code == 3 and not r.timed_out
    assert "out\n" in r.output and "err\n" in r.output
    assert sb.exec("kill -9 $$").exit_code == 137
    assert sb.exec("pwd").output.strip().endswith("/workspace")


def test_commands_can_reopen_dev_stdout_and_stderr(sb: sandbox.Sandbox) -> None:
    # verifier scripts write `> /dev/stderr`: that reopens the output pipe as the sandbox uid
    for _ in range(3):  # the first command of a sandbox and later ones take different paths
        r = sb.exec("echo out > /dev/stdout && echo err > /dev/stderr", timeout=10)
        assert (r.exit_code, r.output) == (0, "out\nerr\n")


def test_long_command_goes_through_a_file(sb: sandbox.Sandbox) -> None:
    r = sb.exec("x=" + "a" * 200_000 + "\necho ${#x}; exit 5")  # > 128 KiB: too long for argv
    assert (r.exit_code, r.output) == (5, "200000\n")


def test_env_and_cwd(sb: sandbox.Sandbox) -> None:
    sb.exec("mkdir -p /workspace/sub")
    r = sb.exec('echo "$FOO|$LANG|$TERM"; pwd', env={"FOO": "bar"}, cwd="/workspace/sub")
    assert "bar|C.UTF-8|dumb" in r.output
    assert r.output.strip().endswith("/workspace/sub")


def test_files_persist_between_commands(sb: sandbox.Sandbox) -> None:
    sb.write_file("/workspace/dir/a.txt", "hello\n", mode=0o600)
    sb.write_file("/home/user/.cfg", b"\x00\x01")
    r = sb.exec("cat /workspace/dir/a.txt; stat -c %a /workspace/dir/a.txt; wc -c < /home/user/.cfg")
    assert r.output.split() == ["hello", "600", "2"]
    sb.exec("echo made > /workspace/dir/b.txt; echo t > /tmp/t; mkdir -p /root/x")
    assert sb.read_file("/workspace/dir/b.txt") == b"made\n"
    assert sb.read_file("/workspace/dir/b.txt", max_bytes=2) == b"ma"
    assert sb.exec("cat /tmp/t").output == "t\n"
    with pytest.raises(FileNotFoundError):
        sb.read_file("/workspace/missing")
    with pytest.raises(SandboxError):
        sb.read_file("/workspace/dir")  # a directory
    sb.exec("rm -rf /workspace/dir")


def test_system_dirs_refuse_writes(sb: sandbox.Sandbox) -> None:
    for path in ("/usr/bin/x", "/etc/passwd"):
        with pytest.raises(SandboxError):
            sb.write_file(path, "x")


def test_timeout_and_truncation(sb: sandbox.Sandbox) -> None:
    r = sb.exec("echo started; sleep 20", timeout=1)
    assert (r.exit_code, r.timed_out) == (124, True)
    assert r.duration_s < 6
    r = sb.exec("seq 1 100000")
    assert r.truncated and len(r.output) < 1100
    assert r.output.startswith("1\n2\n") and r.output.endswith("99999\n100000\n")


def test_mount_for_the_verifier(sb: sandbox.Sandbox, tmp_path: Path) -> None:
    tests, reward = tmp_path / "tests", tmp_path / "reward"
    tests.mkdir()
    reward.mkdir()
    (tests / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    sb.mount(tests, "/tests")
    sb.mount(reward, "/logs/verifier", writable=True)
    r = sb.exec("bash /tests/test.sh && cat /logs/verifier/reward.txt && touch /tests/new")
    # docker delivers stdout and stderr on separate streams: their interleaving is not ordered.
    assert "1" in r.output.splitlines(), r.output
    assert r.exit_code != 0 and "Read-only" in r.output  # /tests is read-only
    assert (reward / "reward.txt").read_text() == "1\n"
    assert sb.read_file("/logs/verifier/reward.txt") == b"1\n"
    sb.unmount("/tests")
    sb.unmount("/logs/verifier")
    assert "test.sh" not in sb.exec("ls /tests 2>&1").output


def test_runtime_on_path(sb: sandbox.Sandbox) -> None:
    if runtime_dir() is None:
        pytest.skip("no task runtime: scripts/setup.sh builds .runtime")
    r = sb.exec("pytest --version && python3 -c 'import yaml; print(\"yaml ok\")'")
    assert r.exit_code == 0 and "yaml ok" in r.output, r.output


@pytest.mark.parametrize("any_backend", sandbox.BACKENDS)
def test_seed_dir_and_close(any_backend: str, tmp_path: Path) -> None:
    backend = any_backend
    if unavailable(backend):
        pytest.skip(unavailable(backend))
    (tmp_path / "seed.txt").write_text("seeded")
    box = sandbox.create(backend, seed_dir=tmp_path)
    assert isinstance(box, sandbox.Sandbox)
    try:
        assert box.exec("cat seed.txt").output == "seeded"
        box.exec("mkdir -p ro/deep && touch ro/deep/f && chmod 000 ro/deep && chmod 500 ro")
        state = getattr(box, "state_dir", None)
    finally:
        box.close()
    box.close()  # idempotent
    if state is not None:
        assert not Path(state).exists()
    with pytest.raises(SandboxError):
        box.exec("true")


# -- bwrap specifics -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bw() -> Iterator[sandbox.Sandbox]:
    why = unavailable("bwrap")
    if why:
        pytest.skip(why)
    with sandbox.open("bwrap") as box:
        yield box


def test_bwrap_layout(bw: sandbox.Sandbox) -> None:
    r = bw.exec("id -u; hostname; test -e /etc/resolv.conf || echo no-resolv; ls /; touch /usr/x 2>&1")
    lines = r.output.splitlines()
    assert lines[:3] == ["0", "sandbox", "no-resolv"]
    assert "Read-only file system" in r.output
    assert bw.process_limit_enforced  # type: ignore[attr-defined]


def test_bwrap_new_top_level_dir_becomes_writable(bw: sandbox.Sandbox) -> None:
    bw.write_file("/app/main.py", "print('hi')\n")
    assert bw.exec("python3 /app/main.py && echo more > /app/x && cat /app/x").output == "hi\nmore\n"
    bw.write_file("/toplevel-file", "x")  # the root dir is the sandbox's own (copy-on-write)
    r = bw.exec("cat /toplevel-file; mkdir -p /solution /etc/sudoers.d && ln -s /app /appl && echo ok")
    assert r.output == "xok\n", r.output


def test_bwrap_mount_target_symlink_refused(bw: sandbox.Sandbox, tmp_path: Path) -> None:
    bw.exec("mkdir -p /logs/real && ln -sfn /logs/real /logs/link")
    with pytest.raises(SandboxError, match="symlink"):
        bw.mount(tmp_path, "/logs/link/verifier", writable=True)
    with pytest.raises(SandboxError):
        bw.mount(tmp_path, "/usr/share/x")


def test_read_file_resolves_symlinks_inside(bw: sandbox.Sandbox) -> None:
    bw.exec("mkdir -p /srv/data && echo inside > /srv/data/f && ln -sf /srv/data/f /workspace/abs "
            "&& ln -sf ../srv/data/f /workspace/rel")
    assert bw.read_file("/workspace/abs") == b"inside\n"
    assert bw.read_file("/workspace/rel") == b"inside\n"
    with pytest.raises(SandboxError):
        bw.read_file("/etc/passwd")


def _pid1(box: sandbox.Sandbox) -> str:
    return box.exec("tr '\\0' ' ' < /proc/1/cmdline; echo; cut -d' ' -f22 /proc/1/stat").output


def test_bwrap_exec_server_lifecycle(tmp_path: Path) -> None:
    """One-shot container for the first command after open() or a mount change, then one exec
    server for the rest; a server that died is replaced, files stay."""
    if unavailable("bwrap"):
        pytest.skip(unavailable("bwrap"))
    with sandbox.open("bwrap") as box:
        assert "bwrap" in _pid1(box)  # first command: bwrap's own init is pid 1
        first = _pid1(box)
        assert "python3" in first and _pid1(box) == first  # the same server from then on
        box.exec("echo kept > /workspace/f")
        box.mount(tmp_path, "/tests")
        assert "bwrap" in _pid1(box)  # new mounts: one-shot again, then a new server
        second = _pid1(box)
        assert "python3" in second and second != first
        server = box._servers[0]  # type: ignore[attr-defined]
        server.proc.kill()  # the container dies between commands
        server.proc.wait()
        r = box.exec("cat /workspace/f")
        assert (r.exit_code, r.output) == (0, "kept\n")
        bwrap = box._servers[0].proc.pid  # type: ignore[attr-defined]
        assert bwrap != server.proc.pid
        inside = Path(f"/proc/{bwrap}/task/{bwrap}/children").read_text().split()  # the server
    # close() leaves nothing running: not bwrap, not the server (it dies with bwrap).
    deadline = time.monotonic() + 3
    while any(Path(f"/proc/{pid}").exists() for pid in inside) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert inside and not any(Path(f"/proc/{pid}").exists() for pid in inside)


def test_bwrap_exec_server_command_line_is_the_same_in_every_sandbox() -> None:
    """`ps` inside shows the exec server: two sandboxes of one process must show the same line
    (InterCode's process-listing task compares the agent's output with a second sandbox's)."""
    if unavailable("bwrap"):
        pytest.skip(unavailable("bwrap"))
    lines = []
    with sandbox.open("bwrap") as a, sandbox.open("bwrap") as b:
        for box in (a, b):
            box.exec("true")  # the first command runs one-shot; the server serves the next
            lines.append(box.exec("tr '\\0' ' ' < /proc/1/cmdline").output)
    assert "python3" in lines[0] and lines[0] == lines[1]


def test_bwrap_limits_say_what_is_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole-sandbox limits where the host gives them (as root here: a cgroup and a tmpfs), a
    line saying so either way, and CLAWLOOP_SANDBOX_LIMITS=require refusing a host without."""
    if unavailable("bwrap"):
        pytest.skip(unavailable("bwrap"))
    import sandbox._limits as limits_module
    from sandbox._limits import cgroup_host

    with sandbox.open("bwrap", disk_mb=32, memory_mb=300) as box:
        limits = box.limits  # type: ignore[attr-defined]
        if os.geteuid() == 0 and cgroup_host()[0] is not None:
            assert limits.whole_sandbox, limits
            assert "300 MiB" in limits.memory and "32 MiB" in limits.disk
            assert box.exec("df -m / | tail -1").output.split()[1] == "32"
    monkeypatch.setattr(limits_module, "cgroup_host", lambda: (None, "no cgroups in this test"))
    with sandbox.open("bwrap") as box:
        assert "per process only" in box.limits.memory  # type: ignore[attr-defined]
        assert "no cgroups in this test" in box.limits.memory  # type: ignore[attr-defined]
    monkeypatch.setenv("CLAWLOOP_SANDBOX_LIMITS", "require")
    with pytest.raises(SandboxError, match="require"):
        sandbox.create("bwrap")


_ABANDON = """
import os, sys, sandbox
sb = sandbox.create("bwrap")
sb.oneshot_commands = 0
sb.exec("sleep 300 &")  # a process in the container when its owner dies
print(sb.state_dir, *(d for cg in sb._cgroups for d in cg.dirs), flush=True)
os._exit(0)  # no close(), no finalizer: a crash
"""


def test_bwrap_reap_after_a_crashed_owner() -> None:
    """A process that dies without closing its sandboxes leaves a state dir (with its tmpfs) and
    cgroups: `reap_state_dirs` (`clawloop sandbox reap`) removes them."""
    if unavailable("bwrap"):
        pytest.skip(unavailable("bwrap"))
    import subprocess
    import sys

    from sandbox.reap import reap_state_dirs

    out = subprocess.run([sys.executable, "-c", _ABANDON], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    paths = [Path(p) for p in out.stdout.split()]
    assert paths and paths[0].is_dir(), out
    deadline = time.monotonic() + 5  # the server sees its socket close and ends the container
    while time.monotonic() < deadline and any((d / "cgroup.procs").read_text().strip()
                                              for d in paths[1:] if d.exists()):
        time.sleep(0.05)
    reap_state_dirs()
    assert not any(p.exists() for p in paths), paths
    assert str(paths[0]) not in Path("/proc/self/mounts").read_text()


def test_bwrap_commands_leave_nothing_in_dev_or_ipc() -> None:
    """/dev, /dev/shm and SysV IPC are per container: the exec server cleans them after every
    command, as a container per command would."""
    if unavailable("bwrap"):
        pytest.skip(unavailable("bwrap"))
    with sandbox.open("bwrap", runtime_dir=runtime_dir()) as box:
        box.oneshot_commands = 0  # type: ignore[attr-defined]
        box.write_file("/workspace/keep", "k")
        listing = box.exec("ls -la /dev /dev/shm | sed 1d | awk '{print $1, $NF}'").output
        r = box.exec("""mkdir -p /dev/shm/d/e && echo x > /dev/shm/d/e/f && chmod 000 /dev/shm/d
            rm /dev/stdout && ln -s /workspace /dev/stdout && touch /dev/extra
            rm -rf /dev/shm && ln -s /workspace /dev/shm
            python3 -c 'import ctypes; l = ctypes.CDLL(None); print(l.shmget(0, 4096, 0o1600) >= 0)'
            chmod 000 /dev""")
        assert "True" in r.output, r.output
        assert box.exec("ls -la /dev /dev/shm | sed 1d | awk '{print $1, $NF}'").output == listing
        assert box.exec("ipcs -m | grep -c 0x || true").output.strip() == "0"
        assert box.exec("readlink /dev/stdout; test -d /dev/shm && echo dir").output == "/proc/self/fd/1\ndir\n"
        assert box.read_file("/workspace/keep") == b"k"  # cleaning /dev/shm did not follow the link


# -- local specifics -------------------------------------------------------------------------


def test_local_maps_paths_and_kills_its_group() -> None:
    with sandbox.open("local") as box:
        box.write_file("/workspace/a.txt", "x")
        r = box.exec('cat a.txt; echo "$HOME"; test -d "$SANDBOX_ROOT/workspace" && echo mapped')
        assert r.output.startswith("x") and "mapped" in r.output
        token = "424242.5"
        box.exec(f"sleep {token} &")
        cmdlines = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                cmdlines.append(Path(f"/proc/{pid}/cmdline").read_bytes())
        assert not any(token.encode() in c for c in cmdlines)
    assert not Path(tempfile.gettempdir(), "workspace", "a.txt").exists()
