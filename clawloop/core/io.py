"""Atomic writes (files, checkpoint directories) and JSON/JSONL helpers: a half-written artifact never survives a crash."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from clawloop.errors import ClawloopError

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside `path`; rename it over `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    # mkstemp makes 0600 files; artifacts get the usual 0644 (less the umask).
    os.fchmod(fd, 0o666 & ~_UMASK)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, obj: Any) -> None:
    """Write pretty JSON (sorted keys, trailing newline) atomically."""
    write_bytes(path, orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")


def link_tree(src: str | Path, dst: str | Path, ignore: Any = None) -> None:
    """Copy directory `src` to a new `dst`, hard-linking files where the filesystem allows
    (a checkpoint costs no space). Safe with this module's writers: they replace a file by
    rename, never write through the shared inode. `ignore` as for shutil.copytree."""
    def link_or_copy(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=link_or_copy, ignore=ignore)


def hand_over(src: str | Path, dst: str | Path) -> None:
    """Make `dst` a copy of checkpoint dir `src` (hard links where possible), atomically."""
    src, dst = Path(src), Path(dst)
    if not src.is_dir():
        raise ClawloopError(f"{src}: checkpoint directory not found")
    tmp = dst.with_name(f".{dst.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    link_tree(src, tmp)
    shutil.rmtree(dst, ignore_errors=True)
    os.replace(tmp, dst)


def read_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise ClawloopError(f"{path}: file not found") from None
    except orjson.JSONDecodeError as e:
        raise ClawloopError(f"{path}: not valid JSON ({e})") from None


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Write one JSON object per line atomically; returns the number of rows."""
    n = 0
    with atomic_path(path) as tmp, tmp.open("wb") as f:
        for row in rows:
            f.write(orjson.dumps(row))
            f.write(b"\n")
            n += 1
    return n


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield (line number, object) for each non-blank line; a bad line raises with file:line."""
    path = Path(path)
    try:
        f = path.open("rb")
    except FileNotFoundError:
        raise ClawloopError(f"{path}: file not found") from None
    with f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield lineno, orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise ClawloopError(f"{path}:{lineno}: not valid JSON ({e})") from None
