"""Limits of a whole sandbox, beyond per-process rlimits: a cgroup for memory and processes, a
size-limited tmpfs for its files.

rlimits count per process: three processes of 200 MiB each passed a 256 MiB RLIMIT_AS, and files
of the largest allowed size, many of them, filled the host's /dev/shm. So where the host allows:

- memory and processes: one cgroup per sandbox, joined by every container the sandbox starts
  (its pid 1 is moved in before it starts anything: sandbox/_pid1.py). cgroup v2 under
  `CLAWLOOP_CGROUP` (a delegated directory with the memory and pids controllers) or, as root,
  /sys/fs/cgroup/clawloop; else, as root, cgroup v1 (the memory and pids hierarchies) below this
  process's own cgroups. As for a container, the memory limit also counts the pages of the
  files its commands write to RAM-backed filesystems (the workspace, /tmp, /dev/shm).
- files: a tmpfs of `disk_mb` mounted on the sandbox's root in its state dir (as root: a mount
  in the host's namespace needs CAP_SYS_ADMIN there), so the workspace, /tmp, /root... share it.

Otherwise a sandbox runs with rlimits alone (`SandboxLimits` says which; `clawloop sandbox
doctor` shows it), or, with CLAWLOOP_SANDBOX_LIMITS=require, refuses to open.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import itertools
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from sandbox._paths import pid_alive
from sandbox.base import SandboxConfig, SandboxError

_CGROUP_FS = Path("/sys/fs/cgroup")
_CONTROLLERS = ("memory", "pids")
_names = itertools.count(1)
_MS_NOSUID, _MS_NODEV, _MNT_DETACH = 2, 4, 2


@dataclass(frozen=True)
class CgroupHost:
    """Where this process puts its sandboxes' cgroups."""

    version: int
    parents: tuple[Path, ...]
    """v2: one directory; v1: the memory one, then the pids one."""


@functools.cache
def cgroup_host() -> tuple[CgroupHost | None, str]:
    """(where sandbox cgroups go, a note); None and why not when the host cannot give them."""
    explicit = os.environ.get("CLAWLOOP_CGROUP")
    if explicit:
        return _v2_host(Path(explicit))
    if (_CGROUP_FS / "cgroup.controllers").is_file():  # the unified hierarchy alone: v2
        if os.geteuid() != 0:
            return None, "cgroup v2 needs root, or a delegated dir in CLAWLOOP_CGROUP"
        return _v2_host(_CGROUP_FS / "clawloop", enable_in=_CGROUP_FS)
    return _v1_host()


def _v2_host(parent: Path, enable_in: Path | None = None) -> tuple[CgroupHost | None, str]:
    try:
        if enable_in is not None:
            _enable(enable_in)
            parent.mkdir(exist_ok=True)
        _enable(parent)
    except OSError as e:
        return None, f"cgroup v2 at {parent}: {e.strerror or e}"
    return CgroupHost(2, (parent,)), f"cgroup v2 in {parent}"


def _enable(d: Path) -> None:
    """Give the memory and pids controllers to the children of `d`."""
    have = (d / "cgroup.subtree_control").read_text().split()
    missing = [c for c in _CONTROLLERS if c not in have]
    if missing:
        (d / "cgroup.subtree_control").write_text(" ".join("+" + c for c in missing))


def _v1_host() -> tuple[CgroupHost | None, str]:
    if os.geteuid() != 0:
        return None, "no cgroup v2, and cgroup v1 needs root"
    mounts: dict[str, str] = {}
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            _, where, fstype, opts = line.split()[:4]
            for c in _CONTROLLERS:
                if fstype == "cgroup" and c in opts.split(","):
                    mounts[c] = where
        own = {}  # controller -> this process's cgroup in its hierarchy
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            for c in names.split(","):
                own[c] = path
    except (OSError, ValueError) as e:
        return None, f"cannot read the cgroup layout: {e}"
    if set(mounts) != set(_CONTROLLERS):
        return None, "neither cgroup v2 nor the v1 memory and pids hierarchies are mounted"
    parents = tuple(Path(mounts[c]) / own.get(c, "/").lstrip("/") for c in _CONTROLLERS)
    if not all(os.access(p, os.W_OK) for p in parents):
        return None, f"cgroup v1: {', '.join(map(str, parents))} not writable"
    return CgroupHost(1, parents), "cgroup v1 (memory, pids)"


class Cgroup:
    """One sandbox's cgroup: a directory per hierarchy (v2: one; v1: memory and pids)."""

    def __init__(self, version: int, dirs: list[Path]) -> None:
        self.version = version
        self.dirs = dirs

    @classmethod
    def create(cls, host: CgroupHost, memory_bytes: int, pids: int) -> Cgroup:
        """A new cgroup with these limits (memory: no swap either)."""
        name = f"clawloop-{os.getpid()}-{next(_names)}"
        cg = cls(host.version, [p / name for p in host.parents])
        try:
            for d in cg.dirs:
                d.mkdir()
            mem, pid = cg.dirs[0], cg.dirs[-1]
            if cg.version == 2:
                _write(mem / "memory.max", memory_bytes)
                _write(mem / "memory.swap.max", 0, optional=True)
            else:  # memsw (memory + swap) must be set after, and not below, the memory limit
                _write(mem / "memory.limit_in_bytes", memory_bytes)
                _write(mem / "memory.memsw.limit_in_bytes", memory_bytes, optional=True)
            _write(pid / "pids.max", pids)
        except OSError as e:
            cg.remove()
            raise SandboxError(f"cannot set up the sandbox's cgroup {cg.dirs[0]}: {e}") from None
        return cg

    def add(self, pid: int) -> None:
        """Move process `pid` (and so its future children) into the cgroup."""
        for d in self.dirs:
            _write(d / "cgroup.procs", pid)

    def procs(self) -> list[int]:
        try:
            return [int(x) for x in (self.dirs[-1] / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def kill(self, wait_s: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup until none is left; False if some remain."""
        end = time.monotonic() + wait_s
        kill_file = self.dirs[0] / "cgroup.kill"  # v2 since Linux 5.14: one write, no races
        pause = 0.0002  # a pid namespace takes about a millisecond to go: poll fast, then less
        while True:
            pids = self.procs()
            if not pids:
                return True
            if self.version == 2 and kill_file.exists():
                _write(kill_file, 1)
            else:
                for p in pids:
                    try:  # noqa: SIM105
                        os.kill(p, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            if time.monotonic() > end:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def remove(self) -> None:
        """Delete the cgroup (empty by now, or about to be: exiting processes linger a moment)."""
        for d in self.dirs:
            for _ in range(200):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY:
                        break
                    time.sleep(0.005)


def reap_cgroups() -> int:
    """Kill and delete the sandbox cgroups of processes that are gone (killed before close)."""
    host, _ = cgroup_host()
    if host is None:
        return 0
    dead: dict[str, list[Path]] = {}
    for parent in host.parents:
        for d in parent.glob("clawloop-*-*"):
            m = re.fullmatch(r"clawloop-(\d+)-\d+", d.name)
            if m and d.is_dir() and not pid_alive(int(m.group(1))):
                dead.setdefault(d.name, []).append(d)
    for dirs in dead.values():
        cg = Cgroup(host.version, dirs)
        cg.kill()
        cg.remove()
    return len(dead)


def _write(path: Path, value: int, optional: bool = False) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        if optional:
            return
        raise
    try:
        os.write(fd, str(value).encode())
    finally:
        os.close(fd)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def mount_tmpfs(path: Path, size_mb: int, owner: tuple[int, int] | None) -> str | None:
    """Mount a tmpfs of `size_mb` MiB on the directory `path` (inodes capped too: each costs
    kernel memory). None when done, else why not (and nothing changed)."""
    if os.geteuid() != 0:
        return "needs root (a tmpfs mounted in the host's mount namespace)"
    uid, gid = owner or (0, 0)
    opts = f"size={size_mb}m,nr_inodes={max(size_mb * 128, 4096)},mode=0755,uid={uid},gid={gid}"
    if _libc().mount(b"tmpfs", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, opts.encode()):
        return f"mount tmpfs: {os.strerror(ctypes.get_errno())}"
    return None


def unmount_tmpfs(path: Path) -> None:
    """Detach the tmpfs on `path`, if one is there (its files are freed with it)."""
    if os.path.ismount(path):
        _libc().umount2(os.fsencode(path), _MNT_DETACH)


@dataclass(frozen=True)
class SandboxLimits:
    """How a sandbox's limits are enforced here, one line each (for `doctor` and tests)."""

    memory: str
    processes: str
    disk: str
    whole_sandbox: bool
    """Memory, processes and disk all counted for the sandbox as a whole."""


def whole_sandbox_limits(c: SandboxConfig, root: Path, owner: tuple[int, int] | None,
                         nproc_enforced: bool, shm_mb: int) -> tuple[SandboxLimits, Cgroup | None]:
    """Set up what the host allows for a new sandbox of config `c`: a tmpfs of `disk_mb` on
    `root` (its state dir's root), a cgroup. Raises SandboxError if that is not all and
    CLAWLOOP_SANDBOX_LIMITS=require."""
    disk_why = mount_tmpfs(root, c.disk_mb, owner)
    host, cg_note = cgroup_host()
    cgroup = None
    if host is not None:
        try:  # pids: the commands' max_processes, plus the exec server or bwrap's init
            cgroup = Cgroup.create(host, c.memory_mb << 20, c.max_processes + 2)
        except SandboxError as e:
            cg_note = str(e)
    limits = SandboxLimits(
        memory=(f"{c.memory_mb} MiB for all processes and the files they write ({cg_note}); "
                "RLIMIT_AS per process" if cgroup else
                f"per process only (RLIMIT_AS {c.memory_mb} MiB): {cg_note}"),
        processes=(f"{c.max_processes} for the whole sandbox ({cg_note})" if cgroup else
                   f"per command only (RLIMIT_NPROC {c.max_processes}"
                   + ("" if nproc_enforced else ", NOT enforced as root") + f"): {cg_note}"),
        disk=(f"{c.disk_mb} MiB for all files (a tmpfs), /dev/shm {min(shm_mb, c.disk_mb)} MiB"
              if disk_why is None else
              f"per file only (RLIMIT_FSIZE {c.max_file_size_mb} MiB): tmpfs {disk_why}"),
        whole_sandbox=cgroup is not None and disk_why is None)
    if os.environ.get("CLAWLOOP_SANDBOX_LIMITS", "") == "require" and not limits.whole_sandbox:
        if cgroup:
            cgroup.remove()
        raise SandboxError(f"CLAWLOOP_SANDBOX_LIMITS=require, but this host cannot limit the "
                           f"whole sandbox: {limits}")
    return limits, cgroup
