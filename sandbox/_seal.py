"""Seal a directory against the file kinds that divert a write, then exec a command (Landlock).

    python3 -I -S clawloop_seal.py DIR COMMAND ARG...

Runs inside a sandbox (every isolated sandbox shows it read-only in PYGUARD_MOUNT, like the import
guard), before a verifier: the verifier and everything it starts (an agent's program it runs, a
daemon that program leaves) cannot create a FIFO, a socket, a device node or a symlink in DIR or
below it. A FIFO swapped for `DIR/reward.txt` blocks the verifier's `echo 0 > reward.txt` until a
process of the agent's has moved the pipe aside and written its own regular file in its place;
without special files and links a write by name lands in a regular file of DIR or fails.
Everything else stays allowed everywhere (files, dirs, renames, removal, sockets and FIFOs in
/tmp, /run... for the services a verifier starts).

Landlock grants by hierarchy, never revokes, so "everywhere but DIR" is granted as every sibling
of each ancestor of DIR (the entries of `/` but the first component of DIR, and so on down) plus
DIR itself without the special kinds. Where the kernel has no Landlock (before 5.13) or its ABI
has no REFER right (before 5.19: renames across dirs would all be refused) the command runs
unsealed; the host checks DIR's entries after the run either way.

It also shields the verifier's own process from the programs it runs (`shield`, seccomp): they
share its uid, so without it one could `prlimit(test.sh, NOFILE=0)` after writing "1" (the
verifier's own `echo 0 > reward.txt` then fails; 10 of 10 runs passed an impossible task), or
ptrace it and hold it at exit. In the verifier's whole tree `ptrace`, `process_vm_writev`,
`pidfd_getfd` and `prlimit64` on another process fail with EPERM (x86_64 and aarch64; elsewhere
nothing is filtered). A verifier that needs gdb or strace cannot use them.

No newer syntax than Python 3.8, stdlib only, no site (`-I -S`): the system's python runs it.
"""

import ctypes
import os
import stat
import sys

_SYS_CREATE, _SYS_ADD_RULE, _SYS_RESTRICT = 444, 445, 446  # the same number on every arch
_CREATE_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
WRITE_FILE, REMOVE_DIR, REMOVE_FILE, MAKE_CHAR = 1 << 1, 1 << 4, 1 << 5, 1 << 6
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM, REFER = 1 << 9, 1 << 10, 1 << 11, 1 << 12, 1 << 13
SPECIAL = MAKE_CHAR | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM
"""Denied in the sealed dir."""
HANDLED = SPECIAL | REMOVE_DIR | REMOVE_FILE | REFER | WRITE_FILE
"""Rights the ruleset handles: the special kinds, what a rename needs (REFER is refused across
dirs by any ruleset of ABI >= 2 unless handled and granted; removal is handled so that the
ancestors of DIR, which get no rule, stay as they are), and writing to an existing file, which
is granted everywhere but in /proc (`UNWRITABLE`)."""
UNWRITABLE = "/proc"
"""No file beneath it is opened for writing: `/proc/PID/mem` of the verifier's own shell is
writable by every program it runs (same uid, dumpable), and the seccomp shield does not see
paths. Writes to stdout through `/dev/stdout` (a link into /proc/self/fd) still land: the
opened file is the pipe or file itself."""


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi(libc) -> int:
    """The kernel's Landlock ABI version, 0 when it has none."""
    v = libc.syscall(ctypes.c_long(_SYS_CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_VERSION))
    return max(int(v), 0)


def _rule(libc, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # gone meanwhile: nothing to grant there
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            return  # only dirs hold entries; a link is not followed
        attr = _PathBeneath(access, fd)
        if libc.syscall(ctypes.c_long(_SYS_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                        ctypes.byref(attr), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
    finally:
        os.close(fd)


def seal(sealed: str) -> bool:
    """Restrict this process (and what it will exec) so; False where the kernel cannot."""
    libc = _libc()
    if abi(libc) < 2:
        return False
    sealed = os.path.normpath(os.path.abspath(sealed))
    handled = ctypes.c_uint64(HANDLED)
    ruleset = libc.syscall(ctypes.c_long(_SYS_CREATE), ctypes.byref(handled), ctypes.c_size_t(8),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        return False
    try:
        parts = [p for p in sealed.split("/") if p]
        parent = "/"
        for part in parts:
            for name in os.listdir(parent):
                if name != part:
                    path = os.path.join(parent, name)
                    _rule(libc, ruleset, path, HANDLED & ~WRITE_FILE if path == UNWRITABLE else HANDLED)
            parent = os.path.join(parent, part)
        _rule(libc, ruleset, sealed, HANDLED & ~SPECIAL)
        if libc.syscall(ctypes.c_long(_SYS_RESTRICT), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            # Without CAP_SYS_ADMIN Landlock needs no_new_privs (bwrap sets it already)
            libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            if libc.syscall(ctypes.c_long(_SYS_RESTRICT), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
                return False
        return True
    finally:
        os.close(ruleset)


_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_EPERM = 0x7FFF0000, 0x00050000 | 1
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_X32_BIT = 0x40000000
SHIELDED = {  # machine: (AUDIT_ARCH, ptrace, process_vm_writev, pidfd_getfd, prlimit64)
    "x86_64": (0xC000003E, 101, 311, 438, 302),
    "aarch64": (0xC00000B7, 117, 271, 438, 261),
}
"""The system calls that act on another process of the same uid, by number per architecture."""


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Insn))]


def shield_program(machine: str) -> list:
    """The seccomp BPF program as (code, jt, jf, k) tuples; [] for an unknown machine."""
    if machine not in SHIELDED:
        return []
    arch, ptrace, vm_write, getfd, prlimit = SHIELDED[machine]
    deny, allow = 11, 12  # indexes of the two returns; a jump counts from the next instruction
    return [(_BPF_LD_W_ABS, 0, 0, 4),                 # 0: seccomp_data.arch
            (_BPF_JEQ_K, 1, 0, arch),                 # 1: another ABI (x86's i386) passes untouched...
            (_BPF_RET_K, 0, 0, _RET_ALLOW),           # 2: ...as the kernel numbers it differently
            (_BPF_LD_W_ABS, 0, 0, 0),                 # 3: seccomp_data.nr
            (_BPF_JGE_K, deny - 5, 0, _X32_BIT),      # 4: x32's numbers alias the same calls
            (_BPF_JEQ_K, deny - 6, 0, ptrace),        # 5
            (_BPF_JEQ_K, deny - 7, 0, vm_write),      # 6
            (_BPF_JEQ_K, deny - 8, 0, getfd),         # 7
            (_BPF_JEQ_K, 0, allow - 9, prlimit),      # 8
            (_BPF_LD_W_ABS, 0, 0, 16),                # 9: args[0], the pid (0: the caller itself)
            (_BPF_JEQ_K, allow - 11, 0, 0),           # 10
            (_BPF_RET_K, 0, 0, _RET_EPERM),           # 11: deny
            (_BPF_RET_K, 0, 0, _RET_ALLOW)]           # 12: allow


def shield() -> bool:
    """Install the filter on this process (inherited by all it execs); False where it cannot."""
    prog = shield_program(os.uname().machine)
    if not prog:
        return False
    libc = _libc()
    insns = (_Insn * len(prog))(*[_Insn(*i) for i in prog])
    fprog = _Prog(len(prog), insns)
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp")
    return True


def main(argv: list) -> None:
    if len(argv) < 3:
        sys.exit("usage: clawloop_seal.py DIR COMMAND ARG...")
    try:
        seal(argv[1])
    except OSError as e:  # the command runs unsealed; the host's check of DIR still holds
        sys.stderr.write(f"clawloop_seal: {e}\n")
    try:
        shield()
    except OSError as e:
        sys.stderr.write(f"clawloop_seal: {e}\n")
    os.execvp(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv)
