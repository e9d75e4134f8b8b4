"""Task directories' file trees: read one into FileSpecs, write FileSpecs back, find task
directories below a root. Shared by every directory format (Harbor, Claw-Eval-Live, ClawGym) and
the verifier's staging, so none of them imports another format's module for it.

A task directory is input from strangers (a registry download, a pool pulled from a remote), so
reading one never leaves it and never reads without bounds: a symbolic link is read only when
its target lies inside the directory (a link out of it, dangling or looping is an error naming
the link), only regular files are read, and each file's size is checked on `lstat`/`fstat`
against a per-file and a per-task cap (`ReadBudget`) before a byte is read. Links inside are
read as the file or tree they point to (FileSpec has no link kind), so the task sees the same
bytes Docker's build context would give it. Writing goes through `write_under`, which refuses
a path that would leave its root, through '..' or through a link already there.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from clawloop.core.tasks.task import FileSpec, mode_problem, path_problem
from clawloop.errors import ClawloopError

JUNK = frozenset({"__pycache__", ".pytest_cache", ".DS_Store", ".git"})
"""Names no task format means as content: caches and VCS state."""

MAX_FILE_BYTES = 16 << 20
"""Largest file a task may bring (the biggest of benchmarks/ is ~0.1 MiB): a pool line holds
every byte, and a NUL costs six in JSON."""
MAX_TASK_BYTES = 64 << 20
"""Most bytes all the files of one task may bring together."""


class ReadBudget:
    """What one task's files may still take: every size is checked before its file is read."""

    def __init__(self, task_bytes: int | None = None, file_bytes: int | None = None) -> None:
        self.task_bytes = MAX_TASK_BYTES if task_bytes is None else task_bytes
        self.file_bytes = MAX_FILE_BYTES if file_bytes is None else file_bytes
        self.used = 0

    def take(self, path: Path | str, size: int) -> None:
        """Count `size` bytes of `path`; ClawloopError (naming the file) past either cap."""
        if size > self.file_bytes:
            raise ClawloopError(f"{path}: {size} bytes, more than a task file may have "
                                f"({self.file_bytes >> 20} MiB)")
        if self.used + size > self.task_bytes:
            raise ClawloopError(f"{path}: the task's files pass {self.task_bytes >> 20} MiB in all")
        self.used += size


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _resolve_link(p: Path, boundary: str) -> str:
    """The real path a link inside the task directory points to; ClawloopError otherwise."""
    try:
        target = os.path.realpath(p, strict=True)
    except (OSError, RuntimeError):
        raise ClawloopError(f"{p}: symbolic link that loops or points nowhere "
                            f"(-> {os.readlink(p)})") from None
    if not _inside(target, boundary):
        raise ClawloopError(f"{p}: symbolic link out of the task directory (-> {os.readlink(p)})")
    return target


def read_file(path: str | Path, budget: ReadBudget | None = None, *, within: str | Path | None = None) -> bytes:
    """One file's bytes: a regular file (a link only to one inside `within`, default its own
    directory), its size counted by `budget` (default: the per-file cap) before it is read."""
    path = Path(path)
    budget = budget or ReadBudget()
    boundary = os.path.realpath(within if within is not None else path.parent)
    if path.is_symlink():
        real = _resolve_link(path, boundary)
    else:
        real = os.path.realpath(path)  # a link on the way (a parent inside `within`) counts too
        if not _inside(real, boundary):
            raise ClawloopError(f"{path}: leads out of the task directory through a symbolic link")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ClawloopError(f"{path}: file not found") from None
    except OSError as e:
        raise ClawloopError(f"{path}: cannot be read ({e.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ClawloopError(f"{path}: not a regular file")
        budget.take(path, st.st_size)
        data = f.read(budget.file_bytes + 1)  # a file that grew since its fstat is still capped
    if len(data) > st.st_size:
        raise ClawloopError(f"{path}: grew while it was read")
    return data


def _mode(st: os.stat_result) -> int:
    return 0o755 if st.st_mode & 0o111 else 0o644


def read_tree(root: Path, *, skip_junk: bool = True, budget: ReadBudget | None = None,
              within: Path | None = None) -> dict[str, FileSpec]:
    """Every file under `root` (relative posix path → spec); modes normalized to 644/755.
    `skip_junk=False` keeps caches too: a Dockerfile may COPY a `__pycache__/*.pyc` on purpose.
    Links are followed only to targets inside `within` (default: `root`), each size is counted
    by `budget` (one per task; default: a fresh one) before the file is read."""
    out: dict[str, FileSpec] = {}
    if not root.is_dir():
        return out
    # A root that is itself a link may point only inside its parent (callers pass the task dir).
    boundary = os.path.realpath(within if within is not None else root.parent if root.is_symlink() else root)
    if not _inside(os.path.realpath(root), boundary):
        raise ClawloopError(f"{root}: symbolic link out of the task directory")
    budget = budget or ReadBudget()
    junk = JUNK if skip_junk else frozenset()
    _walk(Path(os.path.realpath(root)), "", out, junk, skip_junk, budget, boundary,
          (os.path.realpath(root),), shown=root)
    return out


def _walk(real: Path, rel: str, out: dict[str, FileSpec], junk: frozenset[str], skip_junk: bool,
          budget: ReadBudget, boundary: str, stack: tuple[str, ...], shown: Path) -> None:
    """Files of directory `real` (shown in errors as `shown`) under the relative prefix `rel`:
    the files first, then each subdirectory, both sorted (the order os.walk gave)."""
    entries = sorted(os.scandir(real), key=lambda e: e.name)
    subdirs: list[tuple[str, str]] = []
    for e in entries:
        if e.name in junk:
            continue
        path, name = shown / e.name, f"{rel}{e.name}"
        target = _resolve_link(path, boundary) if e.is_symlink() else e.path
        st = os.stat(target)
        if stat.S_ISDIR(st.st_mode):
            if target in stack:
                raise ClawloopError(f"{path}: symbolic link that loops (-> {os.readlink(path)})")
            subdirs.append((e.name, target))
        elif skip_junk and e.name.endswith(".pyc"):
            continue
        elif stat.S_ISREG(st.st_mode):
            out[name] = FileSpec.of(read_file(target, budget, within=boundary), _mode(st))
        else:
            raise ClawloopError(f"{path}: not a regular file (a fifo, socket or device)")
    for n, target in subdirs:
        _walk(Path(target), f"{rel}{n}/", out, junk, skip_junk, budget, boundary, (*stack, target), shown / n)


def empty_dirs(root: Path) -> frozenset[str]:
    """Relative paths of the directories under `root` that hold no files at any depth (links are
    not followed: read_tree reads what they point to, or refuses them)."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        p = Path(dirpath)
        if p != root and not [f for f in filenames if f not in JUNK] and \
                all((p / d).relative_to(root).as_posix() in out for d in dirnames if d not in JUNK):
            out.add(p.relative_to(root).as_posix())
    return frozenset(out)


def _checked(root: Path, rel: str) -> list[str]:
    if why := path_problem(rel):
        raise ClawloopError(f"{root}: {rel!r}: {why}; nothing is written outside {root}")
    return [c for c in rel.split("/") if c not in ("", ".")]


def _open_dirs(root: Path, parts: list[str]) -> int:
    """A descriptor of the directory `root/parts…`: `root` is the caller's (made if missing, and
    followed if a link), each component below it is made here or a real directory already, opened
    relative to its parent's descriptor with O_NOFOLLOW, so a link planted anywhere below `root`,
    even between a check and its use, is never followed. ClawloopError naming the component."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise ClawloopError(f"{root}: not a directory that can be written ({e.strerror})") from None
    cur = root
    try:
        for comp in parts:
            cur = cur / comp
            try:
                os.mkdir(comp, dir_fd=fd)
            except FileExistsError:
                pass
            except OSError as e:
                raise ClawloopError(f"{cur}: cannot be made ({e.strerror})") from None
            try:
                sub = os.open(comp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError:
                raise ClawloopError(f"{cur}: not a directory (a link or a file), nothing written through it") from None
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_dirs_under(root: Path, rel: str) -> Path:
    """`root/rel` as a directory, each component created here or a real directory already
    (never a link, which could lead anywhere): ClawloopError naming it otherwise."""
    parts = _checked(root, rel)
    os.close(_open_dirs(root, parts))
    return root.joinpath(*parts)


def write_under(root: Path, rel: str, data: bytes, mode: int = 0o644) -> Path:
    """Write `data` at `root/rel` and never outside `root`: `rel` is relative without '..' or NUL
    (checked here whatever the caller validated), no directory on the way and not the file
    itself may be a link (each opened relative to its parent, O_NOFOLLOW), and `mode` is
    permission bits only (task.MAX_MODE). The one way clawloop writes a task's files on the host."""
    parts = _checked(root, rel)
    if not parts:
        raise ClawloopError(f"{root}: {rel!r}: empty path")
    p = root.joinpath(*parts)
    if why := mode_problem(mode):  # a spec built without validation (model_copy) still stops here
        raise ClawloopError(f"{p}: mode {why}; nothing written")
    dir_fd = _open_dirs(root, parts[:-1])
    try:
        fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
                     | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError as e:
        raise ClawloopError(f"{p}: cannot be written ({e.strerror}; a link is never written through)") from None
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "wb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ClawloopError(f"{p}: not a regular file, nothing written")
        f.write(data)
        os.fchmod(fd, mode)
    return p


def check_tree(root: Path, files: dict[str, FileSpec], dirs: Iterable[str] = ()) -> None:
    """Refuse, before anything is written, what write_tree or make_dirs_under would refuse part-way:
    a path that is empty or would leave `root`, a mode beyond permission bits (ClawloopError naming it)."""
    for d in dirs:
        _checked(root, d)
    for rel, spec in files.items():
        if not _checked(root, rel.lstrip("/")):
            raise ClawloopError(f"{root}: {rel!r}: empty path")
        if why := mode_problem(spec.mode):
            raise ClawloopError(f"{root / rel.lstrip('/')}: mode {why}; nothing written")


def write_tree(root: Path, files: dict[str, FileSpec]) -> None:
    """Each file at `root/<relative path>` through `write_under` (a leading '/' is dropped), after
    `check_tree` found every path and mode good."""
    check_tree(root, files)
    for rel, spec in files.items():
        write_under(root, rel.lstrip("/"), spec.data(), spec.mode)


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
