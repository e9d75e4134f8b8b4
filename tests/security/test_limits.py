"""Limits of a whole sandbox, and cleanup that a command's leftovers must not break.

A per-process rlimit is no limit on a sandbox: three processes of 200 MiB each passed a 256 MiB
`memory_mb`, and many files of `max_file_size_mb` each filled the host's /dev/shm. What one
command leaves (SysV IPC objects, a directory tree thousands deep, unreadable dirs) must be gone
before the next, and must not crash `close()`.
"""

from __future__ import annotations

import os

import pytest

import sandbox

from .conftest import LIMITS, fresh_sandbox

# Each child holds `mb` MiB (written, so resident) for a second; the parent counts those that
# got there. Children start together: their memory is held at the same time.
HOLD = r"""
import os, sys, time
n, mb = int(sys.argv[1]), int(sys.argv[2])
pids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        try:
            x = bytearray(mb << 20)
            for j in range(0, len(x), 4096):
                x[j] = 1
            time.sleep(1.5)
            os._exit(0)
        except MemoryError:
            os._exit(3)
    pids.append(pid)
held = sum(os.waitpid(p, 0)[1] == 0 for p in pids)
print("HELD", held)
"""


def test_memory_limit_counts_all_processes(backend: str) -> None:
    limit = LIMITS["memory_mb"]  # 512: 4 x 200 MiB do not fit, 2 do
    with fresh_sandbox(backend, cpu_seconds=10) as sb:
        sb.write_file("/workspace/hold.py", HOLD)
        r = sb.exec("python3 /workspace/hold.py 4 200", timeout=60)
        held = int(r.output.split("HELD")[1].split()[0]) if "HELD" in r.output else 0
        assert held * 200 <= limit, r.output
        # A sandbox still usable afterwards, with its memory back.
        r = sb.exec("python3 /workspace/hold.py 2 200", timeout=60)
        assert "HELD 2" in r.output, r.output


def test_disk_limit_counts_all_files(backend: str) -> None:
    if backend == "docker":
        pytest.skip("docker: the workspace is a host-backed bind with no quota (tmpfs dirs are sized)")
    # Files of 7 MiB (under max_file_size_mb = 8) across the workspace, /tmp and /root.
    with fresh_sandbox(backend) as sb:
        r = sb.exec("""
            for i in $(seq 1 16); do
                for d in /workspace /tmp /root; do head -c 7M /dev/zero > $d/fill-$i || break 2; done
            done
            du -smc /workspace /tmp /root | tail -1""", timeout=120)
        total = int(r.output.strip().splitlines()[-1].split()[0])
        assert total <= LIMITS["disk_mb"] + 1, r.output
        sb.exec("rm -f /workspace/fill-* /tmp/fill-* /root/fill-*")
        r = sb.exec("head -c 7M /dev/zero > /workspace/again && echo WROTE")
        assert "WROTE" in r.output, r.output  # space comes back when files go
        sb.exec("rm -f /workspace/again")


IPC = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
IPC_PRIVATE, IPC_CREAT = 0, 0o1000
for _ in range({n}):
    assert libc.shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600) >= 0
    assert libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600) >= 0
    assert libc.semget(IPC_PRIVATE, 1, IPC_CREAT | 0o600) >= 0
print("CREATED")
"""


def test_sysv_ipc_gone_before_the_next_command(sb: sandbox.Sandbox) -> None:
    # 300 of each: their /proc/sysvipc listings are several pages long.
    r = sb.exec(f"python3 -c '{IPC.format(n=300)}'", timeout=60)
    assert "CREATED" in r.output, r.output
    r = sb.exec("wc -l < /proc/sysvipc/shm; wc -l < /proc/sysvipc/msg; wc -l < /proc/sysvipc/sem")
    assert r.output.split() == ["1", "1", "1"], r.output  # the header lines only


def test_deep_and_locked_tree_closes_cleanly(backend: str) -> None:
    """3,000 nested dirs (deeper than Python's recursion limit), some chmod 0, in the workspace
    and /tmp: close() must delete them, with no exception and no state dir left behind."""
    deep = r"""
import os
for top in ("/workspace", "/tmp"):
    os.chdir(top)
    for i in range(3000):
        os.mkdir("d")
        os.chdir("d")
        if i % 500 == 0:
            open("f", "w").write("x")
    os.chdir(top)
os.chmod("/workspace/d/d/d", 0)
os.chmod("/tmp/d", 0)
print("DEEP")
"""
    with fresh_sandbox(backend, cpu_seconds=30) as sb:
        sb.write_file("/workspace/deep.py", deep)
        r = sb.exec("python3 /workspace/deep.py", timeout=120)
        assert "DEEP" in r.output, r.output
        r = sb.exec("echo next")  # the server path empties nothing here, but must go on
        assert r.output == "next\n", r.output
        state = getattr(sb, "state_dir", None)
    if state is not None:
        assert not os.path.lexists(state), state
