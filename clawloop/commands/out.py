"""Where a command writes: every `--out` is checked by `check_out` before any work starts, so a
path the command cannot write, or must not overwrite, costs one line and no run; a run directory
is written whole by `staged_dir`, never mixed with an earlier run.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from clawloop.errors import ClawloopError

Kind = Literal["file", "dir"]

FORCE_HELP = "Replace an output directory that holds an earlier run (whole, once this run has succeeded)."


def check_out(path: Path, kind: Kind = "file", *, run: bool = False, force: bool | None = None,
              flag: str = "--out") -> Path:
    """`path` when the command can write it as a `kind`, else a one-line ClawloopError naming `flag`:
    - a directory where a file goes, or a file (or anything else) where a directory goes;
    - nowhere to create it: its nearest existing ancestor is not a directory or takes no new file
      (tried: /proc, a read-only mount, a directory of another user);
    - a `run` directory that holds anything: a second run would mix with the first, so only
      `force` (the command's --force; None: it has none) lets it through, and `staged_dir` then
      replaces it whole.
    A file that exists is replaced atomically by the writers (clawloop.core.io), as before."""
    shown = f"{flag} {path}"
    if path.exists():
        if kind == "file" and path.is_dir():
            raise ClawloopError(f"{shown}: is a directory; this option names a file")
        if kind == "file" and not path.is_file():
            raise ClawloopError(f"{shown}: not a regular file")
        if kind == "dir" and not path.is_dir():
            raise ClawloopError(f"{shown}: is a file; this option names a directory")
    elif path.is_symlink():
        raise ClawloopError(f"{shown}: a broken symbolic link")
    if run and not force and path.is_dir() and any(path.iterdir()):
        hint = " (--force replaces it)" if force is not None else ""
        raise ClawloopError(f"{shown}: not empty (an earlier run?); name a new or empty directory{hint}")
    _writable(path if kind == "dir" and path.is_dir() else path.parent, shown)
    return path


def _writable(where: Path, shown: str) -> None:
    """Refuse unless a file can be created in `where` or, when it does not exist yet, in its
    nearest existing ancestor (where the writers create the missing directories)."""
    base = where
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise ClawloopError(f"{shown}: {base} is not a directory")
    try:  # access(2) says yes to root everywhere; creating a file is the test that holds
        fd, probe = tempfile.mkstemp(prefix=".clawloop-out.", dir=base)
    except OSError as e:
        raise ClawloopError(f"{shown}: cannot write in {base} ({e.strerror or e})") from None
    os.close(fd)
    os.unlink(probe)


@contextlib.contextmanager
def staged_dir(path: Path) -> Iterator[Path]:
    """A new empty directory beside `path` to write a run into. When the block succeeds it takes
    `path`'s place and an earlier `path` (let through by `check_out` only when empty or with
    --force) is removed; when the block fails it is removed and `path` is untouched. So `path`
    holds one whole run, the old one or the new one, never parts of two."""
    path = Path(os.path.abspath(path))  # `.` has no name to put a sibling beside
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    tmp.mkdir()  # mode 0777 less the umask, like any directory the user makes
    try:
        yield tmp
        old = None
        if path.exists() or path.is_symlink():
            old = path.with_name(f".{path.name}.{secrets.token_hex(4)}.old")
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            old.unlink() if old.is_symlink() else shutil.rmtree(old)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
