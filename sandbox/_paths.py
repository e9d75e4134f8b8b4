"""Host-side access to a sandbox's files, resolving paths the way the sandbox itself sees them.

The host reads and writes a sandbox's files directly (no process needed), which is where a
sandbox could attack the host: a symlink `/workspace/x -> /etc/shadow` is harmless inside, but
a naive `open(state_dir + "/workspace/x")` on the host would follow it to the host's file.
`FileView` therefore resolves every symlink chroot-style (absolute targets restart at the
sandbox's root, `..` stops at it), maps the result through the sandbox's mount table, and
opens the final host path with O_NOFOLLOW. Nothing can race it: no command's process runs
between commands (bwrap's exec server, which stays, touches no files but its own /dev).
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
from dataclasses import dataclass
from pathlib import Path

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
        best: Mount | None = None
        for m in self.mounts.values():
            if (spath == m.target or spath.startswith(m.target + "/")) and (
                best is None or len(m.target) > len(best.target)
            ):
                best = m
        if best is None:
            return None, self.root / spath.lstrip("/")
        if best.host is None:
            return best, None
        rest = spath[len(best.target):].lstrip("/")
        return best, (best.host / rest if rest else best.host)

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
            _, host = self.locate(cand)
            if host is None:  # inside /proc or /dev: nothing on the host to follow
                done.append(part)
                continue
            try:
                st = os.lstat(host)
            except (FileNotFoundError, NotADirectoryError):
                done.append(part)
                continue
            if stat.S_ISLNK(st.st_mode) and (todo or follow_last):
                hops += 1
                if hops > _MAX_SYMLINKS:
                    raise SandboxError(f"{path}: too many levels of symbolic links")
                target = os.readlink(host)
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
        try:
            fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no such file in the sandbox", path) from None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise SandboxError(f"{path}: is a symlink") from None
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SandboxError(f"{path}: not a regular file")
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
        base_target = mount.target if mount else "/"
        base_host = mount.host if mount else self.root
        assert base_host is not None
        cur = base_host
        for part in [p for p in spath[len(base_target):].split("/") if p]:
            cur = cur / part
            try:
                os.mkdir(cur, 0o755)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(cur).st_mode):
                    raise SandboxError(f"{spath}: a parent is not a directory") from None
                continue
            self._chown(cur)

    def write(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Create or replace a regular file (parents created) owned by the sandbox user."""
        if isinstance(data, str):
            data = data.encode()
        spath, host, mount = self.writable_host_path(path)
        self.makedirs(posixpath.dirname(spath), mount)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(host, flags, 0o600)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
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
        finally:
            os.close(fd)

    def _chown(self, p: Path) -> None:
        if self.owner:
            os.lchown(p, *self.owner)


def read_beneath(base: Path, rel: str, max_bytes: int) -> bytes:
    """Read the regular file `base/rel` without following a symlink at any component below the
    trusted directory `base`, refusing files over `max_bytes`. For host-side reads of files a
    sandbox could have written (reward files, harness logs): a symlink there must never make the
    host read one of its own files, and a huge or sparse file must not exhaust its memory.
    Raises FileNotFoundError when absent, SandboxError when a symlink, not a regular file or too big."""
    parts = [p for p in rel.split("/") if p and p != "."]
    if not parts or ".." in parts:
        raise SandboxError(f"{rel!r}: not a relative path beneath {base}")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(base, flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                nfd = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise SandboxError(f"{rel}: {part} is not a plain directory") from None
                raise
            os.close(fd)
            fd = nfd
        try:
            ffd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise SandboxError(f"{rel}: is a symlink") from None
            raise
    finally:
        os.close(fd)
    try:
        st = os.fstat(ffd)
        if not stat.S_ISREG(st.st_mode):
            raise SandboxError(f"{rel}: not a regular file")
        if st.st_size > max_bytes:
            raise SandboxError(f"{rel}: {st.st_size} bytes, more than {max_bytes}")
        chunks, left = [], max_bytes + 1
        while left > 0:
            data = os.read(ffd, min(left, 1 << 20))
            if not data:
                break
            chunks.append(data)
            left -= len(data)
        out = b"".join(chunks)
        if len(out) > max_bytes:  # grew after the fstat
            raise SandboxError(f"{rel}: more than {max_bytes} bytes")
        return out
    finally:
        os.close(ffd)


def rmtree_force(path: Path) -> None:
    """Delete a tree even where the sandbox made directories read-only (chmod then retry)."""
    import shutil
    import sys

    def onerror(func, p, exc_info):  # type: ignore[no-untyped-def]
        # Unlock the parent (and the dir itself), then retry removals; a dir that could not
        # be listed (os.open/os.scandir failed) is handled by the second pass below.
        try:
            os.chmod(os.path.dirname(p), 0o700)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
            if func in (os.unlink, os.remove, os.rmdir):
                func(p)
        except FileNotFoundError:
            pass
        except OSError:
            if func is not os.rmdir:  # a non-empty dir is retried by the second pass
                raise

    # Python 3.12 renamed the hook (onerror is deprecated there).
    hook = {"onexc": onerror} if sys.version_info >= (3, 12) else {"onerror": onerror}
    for _ in range(2):  # the first pass may only unlock directories it could not list
        if not (path.exists() or path.is_symlink()):
            return
        if path.is_symlink() or not path.is_dir():
            path.unlink()
            return
        shutil.rmtree(path, **hook)


def copy_back(src: Path, dest: Path) -> None:
    """Copy the regular files and dirs of a sandbox-written tree to the host, never symlinks
    (the host would follow them), never through a symlink already at the destination."""
    import shutil

    if dest.is_symlink():
        dest.unlink()
    dest.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir(src):
        s, d = Path(entry.path), dest / entry.name
        if entry.is_symlink():
            continue
        if entry.is_dir():
            copy_back(s, d)
        elif entry.is_file():
            if d.is_symlink():
                d.unlink()
            shutil.copyfile(s, d, follow_symlinks=False)


_STATE_RE = re.compile(r"clawloop-(bwrap|local|docker|etc)-(\d+)-")


def state_prefix(kind: str) -> str:
    """Temp dir prefix naming the owning process, so `reap_state_dirs` can tell leftovers."""
    return f"clawloop-{kind}-{os.getpid()}-"


def tmp_root() -> Path:
    """Where sandbox state and host-side temp dirs go: $CLAWLOOP_SANDBOX_TMP, else /dev/shm, else
    the system temp dir. On ext4 here a bwrap open+close took ~107 ms in /tmp and ~5 ms in /dev/shm
    (directory creation and removal dominate)."""
    import tempfile

    env = os.environ.get("CLAWLOOP_SANDBOX_TMP")
    if env:
        return Path(env)
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return Path("/dev/shm")
    return Path(tempfile.gettempdir())


def reap_state_dirs(tmp: Path | None = None) -> int:
    """Delete sandbox state dirs whose owning process is gone (killed, or exited via os._exit)."""
    import tempfile

    n = 0
    for base in {Path(tmp or tempfile.gettempdir()), tmp_root()}:
        if not base.is_dir():
            continue
        for entry in base.iterdir():
            m = _STATE_RE.match(entry.name)
            if m and entry.is_dir() and not entry.is_symlink() and not _pid_alive(int(m.group(2))):
                rmtree_force(entry)
                n += 1
    return n


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
