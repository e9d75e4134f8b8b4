"""A process that outlives its command or its sandbox: what a red team did through pid 1.

In a container per command, pid 1 used to be bwrap's own init: same uid as the command and
dumpable, so a command could ptrace it and clear its parent-death signal; the container then
outlived bwrap, and a setsid'd daemon with it (seen writing into the workspace during
verification, and after `clawloop eval` had exited). Whatever pid 1 is, the host must end the
whole pid namespace after every command, and at close.
"""

from __future__ import annotations

import platform
import secrets
import time

import pytest

import sandbox

from .conftest import fresh_sandbox
from .test_attacks import _host_procs_with, _wait_gone

# Starts a daemon (double fork, setsid, SIGTERM/SIGHUP/SIGINT ignored) that appends to
# /workspace/.survivor, then injects `prctl(PR_SET_PDEATHSIG, 0)` into pid 1 with ptrace
# (x86_64: a `syscall` poked at its instruction pointer, single-stepped, everything restored).
PTRACE_PID1 = r"""
import ctypes, os, signal, sys
token = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        os.execvp("bash", ["bash", "-c", "while :; do echo alive >> /workspace/.survivor; sleep 0.1; done", token])
    os._exit(0)
os.wait()
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
NAMES = ("r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss "
         "fs_base gs_base ds es fs gs").split()
class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in NAMES]
PEEK, POKE, GETREGS, SETREGS, STEP, DETACH, SEIZE, INTERRUPT = 1, 4, 12, 13, 9, 17, 0x4206, 0x4207
WALL = 0x40000000
if libc.ptrace(SEIZE, 1, None, None) != 0:
    print("ptrace-denied", ctypes.get_errno())
    sys.exit(0)
print("SEIZED pid 1")
libc.ptrace(INTERRUPT, 1, None, None)
os.waitpid(1, WALL)
saved = Regs()
libc.ptrace(GETREGS, 1, None, ctypes.byref(saved))
regs = Regs.from_buffer_copy(saved)
word = libc.ptrace(PEEK, 1, saved.rip, None) & (2**64 - 1)
libc.ptrace(POKE, 1, saved.rip, (word & ~0xFFFF) | 0x050F)  # syscall
regs.rax, regs.rdi, regs.rsi, regs.orig_rax = 157, 1, 0, 2**64 - 1  # prctl(PR_SET_PDEATHSIG, 0)
libc.ptrace(SETREGS, 1, None, ctypes.byref(regs))
libc.ptrace(STEP, 1, None, None)
os.waitpid(1, WALL)
libc.ptrace(GETREGS, 1, None, ctypes.byref(regs))
print("INJECTED prctl ->", regs.rax)
libc.ptrace(POKE, 1, saved.rip, word)
libc.ptrace(SETREGS, 1, None, ctypes.byref(saved))
libc.ptrace(DETACH, 1, None, None)
"""


def _survivor_writes(sb: sandbox.Sandbox) -> bool:
    """Does something still append to /workspace/.survivor?"""
    def size() -> int:
        try:
            return len(sb.read_file("/workspace/.survivor"))
        except FileNotFoundError:
            return 0
    before = size()
    time.sleep(0.5)
    return size() != before


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the injection is x86_64 code")
def test_ptrace_on_pid1_keeps_no_daemon_alive(backend: str) -> None:
    token = f"{secrets.randbelow(10**6) + 10**6}"
    with fresh_sandbox(backend, cpu_seconds=10) as sb:
        sb.write_file("/workspace/attack.py", PTRACE_PID1)
        r = sb.exec(f"python3 /workspace/attack.py {token}", timeout=30)
        assert "ptrace-denied" in r.output or "INJECTED" in r.output, r.output
        if backend == "bwrap":  # pid 1 is the exec server, which must not be ptraceable (see
            assert "ptrace-denied" in r.output, r.output  # test_exec_server_cannot_be_taken_over)
        # Gone after the command: on the host, and as seen from the next command.
        assert _wait_gone(token) == [], r.output
        assert not _survivor_writes(sb)
        assert token not in sb.exec("ps -eo args 2>/dev/null || ls /proc").output
    assert _host_procs_with(token) == []


def test_daemon_killed_at_close(backend: str) -> None:
    """A daemon left by the last command of a sandbox (no later command to clean up)."""
    token = f"{secrets.randbelow(10**6) + 10**6}"
    with fresh_sandbox(backend, cpu_seconds=10) as sb:
        sb.exec(f"(setsid bash -c 'trap \"\" TERM HUP INT; exec -a {token} sleep 600' &) ; sleep 0.2",
                timeout=30)
    assert _wait_gone(token) == []
