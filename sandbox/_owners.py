"""The sandbox root's trees as the sandbox uid must see them: its own /etc copied, writable trees
given to it, private trees closed to others, and the check that a tree is readable by all."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path


def copy_etc(template: Path, dest: Path, owner: tuple[int, int] | None) -> None:
    """The sandbox's own /etc: a copy of `template` (ours, never the agent's), as
    `shutil.copytree(symlinks=True)` and `give_tree` made it (mode and times kept, dirs and files
    chowned to `owner`, links as they are) in one pass: a third of copytree's time, whose
    per-entry copystat dominated (~700 entries, nearly all links; benchmarks/perf/README.md)."""
    dirs: list[tuple[str, os.stat_result]] = []
    todo = [(str(template), str(dest))]
    os.mkdir(dest)
    dirs.append((str(dest), os.stat(template)))
    while todo:
        src, dst = todo.pop()
        with os.scandir(src) as it:
            for e in it:
                target = os.path.join(dst, e.name)
                st = e.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    os.symlink(os.readlink(e.path), target)
                    continue
                if stat.S_ISDIR(st.st_mode):
                    os.mkdir(target)
                    dirs.append((target, st))
                    todo.append((e.path, target))
                    continue
                shutil.copyfile(e.path, target, follow_symlinks=False)
                os.chmod(target, stat.S_IMODE(st.st_mode))
                os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
                if owner:
                    os.chown(target, *owner)
    for path, st in reversed(dirs):  # after their contents, as copytree does
        os.chmod(path, stat.S_IMODE(st.st_mode))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        if owner:
            os.chown(path, *owner)


def give_tree(root: Path, owner: tuple[int, int] | None) -> None:
    """chown a tree to the sandbox uid (writable mounts), or make it world-readable."""
    for dirpath, _, filenames in os.walk(root):
        paths = [dirpath, *(os.path.join(dirpath, n) for n in filenames)]
        for p in paths:
            if os.path.islink(p):
                continue
            if owner:
                os.chown(p, *owner)
            else:
                os.chmod(p, os.stat(p).st_mode | (0o555 if p == dirpath else 0o444))


def make_private(root: Path, owner: tuple[int, int]) -> None:
    """chown a tree to the sandbox uid and clear its group and other permission bits."""
    for dirpath, _, filenames in os.walk(root):
        for p in [dirpath, *(os.path.join(dirpath, n) for n in filenames)]:
            if os.path.islink(p):
                continue
            os.chown(p, *owner)
            os.chmod(p, os.stat(p).st_mode & 0o700)


def tree_readable(path: Path) -> bool:
    """Can others read every file and list every dir of the tree?"""
    for dirpath, dirnames, filenames in os.walk(path):
        for n in dirnames:
            if os.stat(os.path.join(dirpath, n)).st_mode & 0o005 != 0o005:
                return False
        for n in filenames:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p) and not os.stat(p).st_mode & 0o004:
                return False
    return True
