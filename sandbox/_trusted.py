"""A root the agent could not program, for the commands that judge it (verifiers).

A bwrap sandbox's root dir is the sandbox's own and writable (copy-on-write semantics: Harbor
images work in /app, tasks edit /etc). That also lets a command reprogram every process that
starts after it: `/etc/ld.so.preload` naming its own library, a `/lib64` swapped for a dir with a
fake loader, `/etc/alternatives/awk` pointing at its script. A verifier started in that root runs
the agent's code with the hidden tests readable.

`build` makes a second root beside it from what the sandbox had at open, and the agent's data:

- the top-level links (`/bin -> usr/bin`, `/lib64`...) and mount points are fresh;
- every top-level *directory* of the agent's root that is not a system name is carried over by
  bind mount (the caller binds the returned names), top-level symlinks of other names as they
  are; top-level regular files, FIFOs and sockets are not (Harbor tasks put their files in dirs,
  and a `/pytest.ini` or `/conftest.py` there would configure the verifier's pytest);
- `/etc` is the image's as built, never the agent's: a copy taken by `freeze_etc` once the
  task's setup ran (before: the sandbox's template with its layers), bound read-only. The
  configuration the verifier's own tools read (`file`'s /etc/magic, pip's /etc/xdg/pip, an
  /etc/init.d script `service` runs, git's, openssl's, the loader's) is then the task's, by one
  rule rather than a list of names; the cost is that a verifier cannot check an edit the agent
  made to /etc.

The result is bound read-only at `/`, so a script of the agent's that a verifier runs cannot
change it either. Host-side, nothing here follows a symlink of the agent's tree (lstat and
readlink only; files are hard-linked or copied by no-follow descriptors), FIFOs are never opened,
and the walk is iterative with caps on depth and entries: whatever the agent left, this neither
blocks, recurses nor raises beyond `SandboxError`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sandbox._layout import RESERVED_TOPS
from sandbox.base import SandboxError

SYMLINKS = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64",
            "lib32": "usr/lib32", "libx32": "usr/libx32"}
"""Debian's merged-/usr links, made fresh in every root."""
ETC_MAX_ENTRIES = 20_000
"""Most entries of the agent's /etc carried over (the template has ~700); past it a SandboxError."""
TOP_MAX_ENTRIES = 256
"""Most top-level entries of the agent's root carried over (each dir is a bind mount: a root
with 100k of them would make bwrap's argv too long for exec); past it a SandboxError."""
ETC_MAX_DEPTH = 32
"""Deeper entries of the agent's /etc are not carried over (nothing real nests so deep)."""


def system_links(root: Path) -> None:
    """The merged-/usr links of a root, for the /usr dirs this host has."""
    for top, target in SYMLINKS.items():
        if os.path.isdir("/" + target):
            os.symlink(target, root / top)


def build(agent_root: Path, dest: Path, mount_points: list[str]) -> list[str]:
    """Fill the empty dir `dest` as a trusted root for the sandbox whose root is `agent_root`;
    returns the top-level dir names of the agent's to bind over it. Its /etc is an empty mount
    point (the caller binds the frozen /etc there). `mount_points`: the sandbox paths its mounts
    need (they must exist: the root is read-only once bound)."""
    system_links(dest)
    carried = []
    with os.scandir(agent_root) as it:
        entries = sorted(it, key=lambda e: e.name)
    if len(entries) > TOP_MAX_ENTRIES:
        raise SandboxError(f"/ has {len(entries)} entries, more than the {TOP_MAX_ENTRIES} a trusted root carries")
    for e in entries:
        if e.name in RESERVED_TOPS or e.name == "etc":
            continue
        if e.is_dir(follow_symlinks=False):
            (dest / e.name).mkdir()
            carried.append(e.name)
        elif e.is_symlink():
            os.symlink(os.readlink(e.path), dest / e.name)
    for name in ("usr", "proc", "dev", "sys", "etc"):
        (dest / name).mkdir(exist_ok=True)
    for target in mount_points:
        parts = target.strip("/").split("/")
        if parts[0] not in carried:  # below a carried dir the agent's own tree has it
            _mkdirs(dest, parts)
    dest.chmod(0o755)
    return carried


def freeze_etc(etc: Path, dest: Path) -> None:
    """Copy the sandbox's /etc `etc` into the new dir `dest`: files copied (never hard-linked:
    a later write into the same inode would change the copy), symlinks recreated, FIFOs and
    devices left out, nothing followed; every entry readable (the copy is bound read-only)."""
    dest.mkdir()
    if os.path.isdir(etc) and not os.path.islink(etc):
        _copy_tree(etc, dest)
    for dirpath, _, _ in os.walk(dest):
        os.chmod(dirpath, 0o755)


def clear_top(root: Path, name: str) -> None:
    """Remove what `build` put at /name of a trusted root (a carried link or mount point)."""
    p = root / name
    if p.is_symlink():
        p.unlink()
    elif p.is_dir():
        p.rmdir()  # an empty mount point of ours


def _mkdirs(base: Path, parts: list[str]) -> None:
    cur = base
    for p in parts:
        cur = cur / p
        if not cur.is_dir() or cur.is_symlink():
            if os.path.lexists(cur):
                raise SandboxError(f"trusted root: mount point /{'/'.join(parts)} is not a directory")
            cur.mkdir()


def _copy_tree(src: Path, dest: Path) -> None:
    """Copy a tree the agent could have written: dirs made, regular files copied (never
    hard-linked: a later write into the same inode would change the copy), symlinks recreated;
    iterative, never following a link, FIFOs and devices left out."""
    todo: list[tuple[Path, Path, int]] = [(src, dest, 0)]
    count = 0
    while todo:
        s, d, depth = todo.pop()
        try:
            with os.scandir(s) as it:
                entries = list(it)
        except OSError:
            continue  # made unreadable: the dir stays empty
        for e in entries:
            count += 1
            if count > ETC_MAX_ENTRIES:
                raise SandboxError(f"/etc has more than {ETC_MAX_ENTRIES} entries: too many to verify in a "
                                   "trusted root")
            target = d / e.name
            try:
                st = os.lstat(e.path)
                if stat.S_ISDIR(st.st_mode):
                    if depth < ETC_MAX_DEPTH:
                        target.mkdir()
                        todo.append((Path(e.path), target, depth + 1))
                elif stat.S_ISLNK(st.st_mode):
                    os.symlink(os.readlink(e.path), target)
                elif stat.S_ISREG(st.st_mode):
                    _copy_file(Path(e.path), target, st.st_mode)
            except OSError:
                continue  # an entry that cannot be read is left out, as an unreadable dir


def _copy_file(src: Path, dest: Path, mode: int) -> None:
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      stat.S_IMODE(mode) & 0o755 | 0o444)
        try:
            while chunk := os.read(fd, 1 << 20):
                os.write(out, chunk)
        finally:
            os.close(out)
    finally:
        os.close(fd)
