"""Task directories' file trees: read one into FileSpecs, write FileSpecs back, find task
directories below a root. Shared by every directory format (Harbor, Claw-Eval-Live, ClawGym) and
the verifier's staging, so none of them imports another format's module for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from clawloop.tasks.task import FileSpec

JUNK = frozenset({"__pycache__", ".pytest_cache", ".DS_Store", ".git"})
"""Names no task format means as content: caches and VCS state."""


def read_tree(root: Path, *, skip_junk: bool = True) -> dict[str, FileSpec]:
    """Every file under `root` (relative posix path → spec); modes normalized to 644/755.
    `skip_junk=False` keeps caches too: a Dockerfile may COPY a `__pycache__/*.pyc` on purpose."""
    out: dict[str, FileSpec] = {}
    if not root.is_dir():
        return out
    junk = JUNK if skip_junk else frozenset()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d not in junk)
        for name in sorted(filenames):
            if name in junk or (skip_junk and name.endswith(".pyc")):
                continue
            p = Path(dirpath) / name
            mode = 0o755 if p.stat().st_mode & 0o111 else 0o644
            out[p.relative_to(root).as_posix()] = FileSpec.of(p.read_bytes(), mode)
    return out


def empty_dirs(root: Path) -> frozenset[str]:
    """Relative paths of the directories under `root` that hold no files at any depth."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root, topdown=False, followlinks=True):
        p = Path(dirpath)
        if p != root and not [f for f in filenames if f not in JUNK] and \
                all((p / d).relative_to(root).as_posix() in out for d in dirnames if d not in JUNK):
            out.add(p.relative_to(root).as_posix())
    return frozenset(out)


def write_tree(root: Path, files: dict[str, FileSpec]) -> None:
    for rel, spec in files.items():
        p = root / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(spec.data())
        p.chmod(spec.mode)


def find_dirs(root: str | Path, is_task: Callable[[Path], bool], *, depth: int,
              skip: Callable[[str], bool]) -> list[Path]:
    """Task directories (`is_task`) at `root` itself or up to `depth` levels below it, sorted.
    Nothing below a task directory is searched; `skip(name)` prunes a directory by its name."""
    root = Path(root)
    if is_task(root):
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, _ in os.walk(root):
        p = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not skip(d))
        if p != root and is_task(p):
            found.append(p)
            dirnames[:] = []
        elif len(p.relative_to(root).parts) >= depth:
            dirnames[:] = []
    return sorted(found)
