"""Bounded readers of the documents a task ships (TOML, YAML): JSON-ready data or one error line.

A small file can describe a huge document: YAML aliases written out per path (455 bytes were a
44 MiB pool line), tables nested thousands deep (the parsers recurse). Every document a loader
reads from a task goes through here, so one cap holds for task.toml, task.yaml, solution.yaml,
docker-compose.yaml and Claw-Eval-Live's task.yaml alike.
"""

from __future__ import annotations

import datetime
import tomllib
from pathlib import Path
from typing import Any

from clawloop.core.tasks.file_tree import MAX_FILE_BYTES, ReadBudget, read_file
from clawloop.core.tasks.task import MAX_NESTING
from clawloop.errors import ClawloopError


def plain(v: Any, where: str) -> Any:
    """TOML or YAML values as JSON-ready data (dates become ISO strings), bounded: the copy nests
    at most MAX_NESTING deep and holds at most MAX_FILE_BYTES (strings by length, anything else
    8 bytes), else a ClawloopError naming `where`. The copy is made per path, so a YAML alias is
    written out wherever it is used: 455 bytes of nested aliases were a 44 MiB pool line."""
    left = MAX_FILE_BYTES

    def walk(x: Any, depth: int) -> Any:
        nonlocal left
        left -= len(x) if isinstance(x, str) else 8
        if left < 0:
            raise ClawloopError(f"{where}: more than {MAX_FILE_BYTES >> 20} MiB once its aliases are written out")
        if depth > MAX_NESTING:
            raise ClawloopError(f"{where}: nested deeper than {MAX_NESTING} levels")
        if isinstance(x, dict):
            return {walk(k, depth + 1): walk(y, depth + 1) for k, y in x.items()}
        if isinstance(x, list):
            return [walk(y, depth + 1) for y in x]
        if isinstance(x, datetime.date | datetime.time):
            return x.isoformat()
        return x

    return walk(v, 0)


def prune(d: dict[str, Any]) -> dict[str, Any]:
    """`d` without its empty tables, at any depth (each table is visited once)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            v = prune(v)
            if not v:
                continue
        out[k] = v
    return out


def read_toml(path: Path, where: str, budget: ReadBudget) -> dict[str, Any]:
    try:
        return plain(tomllib.loads(read_file(path, budget).decode("utf-8")), where)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ClawloopError(f"{where}: not valid TOML ({e})") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ClawloopError(f"{where}: nested deeper than {MAX_NESTING} levels") from None


def read_yaml(data: bytes, where: str) -> Any:
    """A YAML document as JSON-ready data (`plain`); ClawloopError naming `where`."""
    import yaml

    try:
        return plain(yaml.safe_load(data.decode("utf-8")), where)
    except UnicodeDecodeError:
        raise ClawloopError(f"{where}: not UTF-8 text") from None
    except yaml.YAMLError as e:
        raise ClawloopError(f"{where}: not valid YAML ({str(e).splitlines()[0]})") from None
    except RecursionError:  # PyYAML's composer recurses per nested node
        raise ClawloopError(f"{where}: nested deeper than {MAX_NESTING} levels") from None
