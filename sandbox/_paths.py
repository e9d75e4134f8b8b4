"""Host-side access to a sandbox's files, resolving paths the way the sandbox itself sees them.

The host reads and writes a sandbox's files directly (no process needed), which is where a
sandbox could attack the host: a symlink `/workspace/x -> /etc/shadow` is harmless inside, but
a naive `open(state_dir + "/workspace/x")` on the host would follow it to the host's file.
`FileView` therefore resolves every symlink chroot-style (absolute targets restart at the
sandbox's root, `..` stops at it), maps the result through the sandbox's mount table, and then
opens it one component at a time, each relative to the directory fd of the last and with
O_NOFOLLOW (as openat2's RESOLVE_NO_SYMLINKS would). No process of the sandbox should run while
the host does this, but if one did (a command still running in another thread, a process that
escaped its command) and swapped a directory of the path with a symlink to a host directory
between the resolution and the open (rename(2) with RENAME_EXCHANGE is atomic), the open fails
instead of following it: the host never reads or writes a file of its own through a sandbox
path, and at worst reads or writes another file of the same sandbox.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sandbox._server import remove_tree  # the exec server's own, iterative and flat
from sandbox.base import SandboxError

_MAX_SYMLINKS = 40


@dataclass(frozen=True)
class Mount:
    """One entry of a sandbox's mount table."""

    target: str
    """Normalised absolute path inside the sandbox."""
    host: Path | None
    """Host directory shown there; None for pseudo filesystems (/proc, /dev)."""
    writable: bool
    system: bool = False
    """Part of the system view (/usr, /etc, the runtime): never read or written by the host API."""


def sandbox_path(path: str) -> str:
    """Validate and normalise an absolute path inside the sandbox."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise SandboxError(f"sandbox paths must be absolute, got {path!r}")
    if "\0" in path:
        raise SandboxError(f"sandbox path contains a NUL byte: {path!r}")
    norm = posixpath.normpath(path)
    # normpath keeps a leading '//' (POSIX); the sandbox has a single root.
    return "/" + norm.lstrip("/")


def mount_source(host_path: Path) -> Path:
    """The host directory a backend's `mount()` shows, resolved; SandboxError when it is none."""
    host = Path(host_path).resolve()
    if not host.is_dir():
        raise SandboxError(f"mount source {host_path}: not a directory")
    return host


class FileView:
    """The files of one sandbox as the host sees them: a root directory plus mounts."""

    def __init__(self, root: Path, owner: tuple[int, int] | None = None) -> None:
        self.root = root
        self.owner = owner
        """(uid, gid) given to what the host creates, so the sandbox user can change it."""
        self.mounts: dict[str, Mount] = {}
        self.root_writable = True
        """False: only mounts are writable (bwrap's root is read-only inside)."""

    def add(self, mount: Mount) -> None:
        self.mounts[mount.target] = mount

    def remove(self, target: str) -> Mount | None:
        return self.mounts.pop(sandbox_path(target), None)

    def locate(self, spath: str) -> tuple[Mount | None, Path | None]:
        """Host path of a normalised sandbox path, and the mount it lies in (None: the root)."""
        mount, base, rest = self.split(spath)
        return mount, (None if base is None else base.joinpath(*rest))

    def split(self, spath: str) -> tuple[Mount | None, Path | None, list[str]]:
        """(mount, its host dir, the path's components below it) of a normalised sandbox path:
        the host dir is trusted (the host made it), the components are not."""
        best: Mount | None = None
        for m in self.mounts.values():
            if (spath == m.target or spath.startswith(m.target + "/")) and (
                best is None or len(m.target) > len(best.target)
            ):
                best = m
        base = self.root if best is None else best.host
        rest = spath[len(best.target) if best else 0:].split("/")
        return best, base, [p for p in rest if p]

    def _lstat(self, spath: str) -> tuple[os.stat_result, str | None] | None:
        """lstat of a sandbox path whose parents are plain directories, and the symlink's target
        if it is one; None when absent (or a parent is not a directory, or was swapped)."""
        _, base, parts = self.split(spath)
        assert base is not None and parts
        try:
            fd = open_dirs(base, parts[:-1], spath)
        except (SandboxError, FileNotFoundError, NotADirectoryError):
            return None
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            return st, (os.readlink(parts[-1], dir_fd=fd) if stat.S_ISLNK(st.st_mode) else None)
        except (FileNotFoundError, NotADirectoryError):
            return None
        finally:
            os.close(fd)

    def resolve(self, path: str, follow_last: bool = True) -> tuple[str, Path | None, Mount | None]:
        """Follow symlinks chroot-style; return (sandbox path, host path, mount)."""
        todo = [p for p in sandbox_path(path).split("/") if p]
        done: list[str] = []
        hops = 0
        while todo:
            part = todo.pop(0)
            if part == "..":
                if done:
                    done.pop()
                continue
            cand = "/" + "/".join([*done, part])
            _, base, rest = self.split(cand)
            found = self._lstat(cand) if base is not None and rest else None
            if found is None:  # absent, a mount's root, or in /proc or /dev (nothing on the host)
                done.append(part)
                continue
            target = found[1]
            if target is not None and (todo or follow_last):
                hops += 1
                if hops > _MAX_SYMLINKS:
                    raise SandboxError(f"{path}: too many levels of symbolic links")
                if target.startswith("/"):
                    done = []
                todo = [p for p in target.split("/") if p and p != "."] + todo
                continue
            done.append(part)
        spath = "/" + "/".join(done)
        mount, host = self.locate(spath)
        return spath, host, mount

    def read(self, path: str, max_bytes: int | None = None) -> bytes:
        """Read a regular file; refuses paths that resolve into system or pseudo filesystems."""
        spath, host, mount = self.resolve(path)
        if host is None or (mount is not None and mount.system):
            raise SandboxError(f"{path}: resolves to {spath}, outside the sandbox's own files")
        _, base, parts = self.split(spath)
        assert base is not None
        if not parts:
            raise SandboxError(f"{path}: not a regular file")
        try:
            fd = open_beneath(base, parts, os.O_RDONLY | os.O_NONBLOCK, path)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no such file in the sandbox", path) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SandboxError(f"{path}: not a regular file")
            return _read_fd(fd, max_bytes)
        finally:
            os.close(fd)

    def writable_host_path(self, path: str) -> tuple[str, Path, Mount | None]:
        """Resolve `path` for writing; refuses read-only and system locations."""
        spath, host, mount = self.resolve(path)
        if host is None or (mount is not None and (mount.system or not mount.writable)) or (
                mount is None and not self.root_writable):
            where = mount.target if mount else spath
            raise SandboxError(f"{path}: {where} is read-only in the sandbox")
        if spath == "/":
            raise SandboxError(f"{path}: not a file path")
        return spath, host, mount

    def makedirs(self, spath: str, mount: Mount | None) -> None:
        """Create the missing directories of `spath` (resolved) under its mount or the root."""
        base, parts = self._below(spath, mount)
        os.close(open_dirs(base, parts, spath, create=True, owner=self.owner))

    def _below(self, spath: str, mount: Mount | None) -> tuple[Path, list[str]]:
        """The host dir of `mount` (None: the root) and the components of `spath` below it."""
        base = mount.host if mount else self.root
        assert base is not None
        return base, [p for p in spath[len(mount.target) if mount else 0:].split("/") if p]

    def write(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Create or replace a regular file (parents created) owned by the sandbox user."""
        if isinstance(data, str):
            data = data.encode()
        spath, _, mount = self.writable_host_path(path)
        base, parts = self._below(spath, mount)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK
        try:
            fd = open_beneath(base, parts, flags, path, mode=0o600, create=True, owner=self.owner)
        except OSError as e:
            if e.errno in (errno.ENXIO, errno.EISDIR):
                raise SandboxError(f"{path}: not a regular file") from None
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SandboxError(f"{path}: not a regular file")
            os.fchmod(fd, mode & 0o7777)
            if self.owner:
                os.fchown(fd, *self.owner)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError as e:
            if e.errno == errno.ENOSPC:  # the sandbox's own quota (bwrap's tmpfs): its problem
                raise SandboxError(f"{path}: no space left in the sandbox") from None
            raise
        finally:
            os.close(fd)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_dirs(base: Path, parts: list[str], what: str, *, create: bool = False,
              owner: tuple[int, int] | None = None) -> int:
    """An fd of the directory `base/parts...`, each component opened relative to the fd of the
    one before with O_NOFOLLOW: a symlink at any component below the trusted `base` (one swapped
    in meanwhile included) or anything but a directory raises SandboxError, naming `what`. A
    missing one raises FileNotFoundError, or with `create` is made (0755, given to `owner`)."""
    fd = os.open(base, _DIR_FLAGS)
    try:
        for part in parts:
            made = False
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                    made = True
                except FileExistsError:
                    pass
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise SandboxError(f"{what}: {part} is not a plain directory") from None
                raise
            os.close(fd)
            fd = nfd
            if made and owner:
                os.fchown(fd, *owner)
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_beneath(base: Path, parts: list[str], flags: int, what: str, *, mode: int = 0o600,
                 create: bool = False, owner: tuple[int, int] | None = None) -> int:
    """Open the file `base/parts...` with `flags`, following no symlink below `base` (see
    `open_dirs`; `create` makes missing parent dirs). A symlink there raises SandboxError."""
    dfd = open_dirs(base, parts[:-1], what, create=create, owner=owner)
    try:
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise SandboxError(f"{what}: is a symlink") from None
        raise
    finally:
        os.close(dfd)


def _read_fd(fd: int, max_bytes: int | None) -> bytes:
    """Read to EOF, or the first `max_bytes` bytes."""
    chunks = []
    left = max_bytes if max_bytes is not None else -1
    while left != 0:
        data = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
        if not data:
            break
        chunks.append(data)
        if left > 0:
            left -= len(data)
    return b"".join(chunks)


def read_beneath(base: Path, rel: str, max_bytes: int) -> bytes:
    """Read the regular file `base/rel` without following a symlink at any component below the
    trusted directory `base`, refusing files over `max_bytes`. For host-side reads of files a
    sandbox could have written (reward files, harness logs): a symlink there must never make the
    host read one of its own files, and a huge or sparse file must not exhaust its memory.
    Raises FileNotFoundError when absent, SandboxError when a symlink, not a regular file or too big."""
    parts = [p for p in rel.split("/") if p and p != "."]
    if not parts or ".." in parts:
        raise SandboxError(f"{rel!r}: not a relative path beneath {base}")
    ffd = open_beneath(base, parts, os.O_RDONLY | os.O_NONBLOCK, rel)
    try:
        st = os.fstat(ffd)
        if not stat.S_ISREG(st.st_mode):
            raise SandboxError(f"{rel}: not a regular file")
        if st.st_size > max_bytes:
            raise SandboxError(f"{rel}: {st.st_size} bytes, more than {max_bytes}")
        out = _read_fd(ffd, max_bytes + 1)
        if len(out) > max_bytes:  # grew after the fstat
            raise SandboxError(f"{rel}: more than {max_bytes} bytes")
        return out
    finally:
        os.close(ffd)


def rmtree_force(path: Path) -> bool:
    """Delete a tree a sandbox wrote: without recursion (it may nest dirs thousands deep), also
    where it made directories unreadable or read-only. Best effort, never raises (it runs at
    close and at exit); True when nothing is left."""
    remove_tree(str(path))
    return not os.path.lexists(path)


def copy_back(src: Path, dest: Path) -> None:
    """Copy the regular files and dirs of a sandbox-written tree to the host, never symlinks
    (the host would follow them), never through a symlink already at the destination; iterative
    (a sandbox may nest dirs thousands deep), FIFOs and devices left out."""
    todo = [(src, dest)]
    while todo:
        s, d = todo.pop()
        try:
            if d.is_symlink():
                d.unlink()
            d.mkdir(parents=True, exist_ok=True)
            entries = list(os.scandir(s))
        except OSError:
            continue  # too deep for a path (ENAMETOOLONG), or made unreadable: left out
        for entry in entries:
            target = d / entry.name
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    todo.append((Path(entry.path), target))
                elif entry.is_file(follow_symlinks=False):
                    if target.is_symlink():
                        target.unlink()
                    shutil.copyfile(entry.path, target, follow_symlinks=False)
            except OSError:
                continue


_STATE_RE = re.compile(r"clawloop-(bwrap|local|docker|etc)-(\d+)-")


def state_prefix(kind: str) -> str:
    """Temp dir prefix naming the owning process, so `reap_state_dirs` can tell leftovers."""
    return f"clawloop-{kind}-{os.getpid()}-"


def tmp_root() -> Path:
    """Where sandbox state and host-side temp dirs go: $CLAWLOOP_SANDBOX_TMP, else /dev/shm, else
    the system temp dir: creating and removing a sandbox's directories dominates its open+close,
    and costs far less in memory than on disk (figures: benchmarks/perf/README.md)."""
    env = os.environ.get("CLAWLOOP_SANDBOX_TMP")
    if env:
        return Path(env)
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return Path("/dev/shm")
    return Path(tempfile.gettempdir())


def pid_alive(pid: int) -> bool:
    """Is a process `pid` running (perhaps under another uid)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
