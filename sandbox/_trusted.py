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
from sandbox._paths import rmtree_force
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


DELIVERABLE_ETC = ("passwd", "group", "shadow", "gshadow", "sudoers", "sudoers.d", "crontab", "cron.d",
                   "cron.hourly", "cron.daily", "cron.weekly", "cron.monthly", "logrotate.d", "nginx", "apache2")
"""Entries of /etc that tasks ask the agent to edit (add a user, a sudoers rule, a cron job, a site
config) and that no tool a verifier runs on its own behalf reads to decide what code it runs: the
loader, interpreters, pip, git, file, openssl read none of them. /etc/hosts is not one: the
names a verifier's checks resolve stay the task's. A trusted root shows the agent's
version of these over the frozen /etc (`verifier_etc`); every other entry stays the image's. A
verifier that starts nginx with the agent's site config runs the agent's configuration, as it
runs the agent's program: that is the deliverable."""


def verifier_etc(agent_etc: Path, frozen: Path, dest: Path) -> bool:
    """Fill the new dir `dest` with `frozen` and, over it, the agent's DELIVERABLE_ETC entries, when
    any differs from the frozen one; False (nothing made) when none does, so that the frozen /etc
    is bound as it is. Copies as `freeze_etc` does: nothing followed, capped."""
    changed = [n for n in DELIVERABLE_ETC if _snapshot(agent_etc / n) != _snapshot(frozen / n)]
    if not changed:
        return False
    freeze_etc(frozen, dest)
    for name in changed:
        target = dest / name
        rmtree_force(target)  # the frozen entry (file, link or tree) the agent's replaces
        src = agent_etc / name
        st = os.lstat(src) if os.path.lexists(src) else None
        if st is None:
            continue  # the agent removed it (userdel of the last user...): absent here too
        if stat.S_ISDIR(st.st_mode):
            target.mkdir()
            _copy_tree(src, target)
        elif stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(src), target)
        elif stat.S_ISREG(st.st_mode):
            _copy_file(src, target, st.st_mode)
    for dirpath, _, _ in os.walk(dest):
        os.chmod(dirpath, 0o755)
    return True


SNAPSHOT_MAX_BYTES = 4 << 20
"""Most bytes of one deliverable entry compared; past it the entry counts as changed."""


def _snapshot(path: Path) -> tuple[object, ...] | None:
    """What an /etc entry holds, comparable (kinds, names, link targets, bytes), without following
    a link; None when absent."""
    if not os.path.lexists(path):
        return None
    out: list[object] = []
    todo, size = [(path, "")], 0
    while todo:
        p, rel = todo.pop()
        try:
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "l", os.readlink(p)))
            elif stat.S_ISREG(st.st_mode):
                size += st.st_size
                if size > SNAPSHOT_MAX_BYTES or len(out) > ETC_MAX_ENTRIES:
                    return ("too large", os.urandom(8))  # equal to nothing: taken as changed
                fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
                try:
                    out.append((rel, "f", os.read(fd, st.st_size + 1)))
                finally:
                    os.close(fd)
            elif stat.S_ISDIR(st.st_mode) and rel.count("/") < ETC_MAX_DEPTH:
                out.append((rel, "d"))
                with os.scandir(p) as it:
                    todo.extend((Path(e.path), f"{rel}/{e.name}") for e in it)
        except OSError:
            out.append((rel, "?"))
    return tuple(sorted(out, key=repr))


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
