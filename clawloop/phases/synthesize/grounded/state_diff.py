"""Filesystem state of a sandbox: snapshots, their difference, and the checks that pin it down.

A snapshot (taken inside the sandbox by `state_probe.py`) maps each path under a root to its
type, mode, size, sha256 (regular files) or link target. `diff(before, after)` lists the
changes; `expected_checks` turns them into the checks of a hindsight verifier:

- created or modified regular file → same content (sha256); its mode too when it was created
  with a mode other than 0644 or the episode changed the mode;
- created directory → a directory (its mode when not 0755); implied and skipped when a created
  path lies inside it and its mode is the default;
- created or retargeted symbolic link → a link resolving to the same place (`ln -s a.txt b` and
  `ln -s /workspace/a.txt b` are the same change);
- deleted path → nothing there (only the topmost deleted path of a deleted tree);
- mode change alone → those permission bits;
- type change (file → directory, ...) → deletion plus creation of the new thing;
- every seeded regular file the episode left alone → still there with the same content
  (`keep`), so a solution may not trample the rest of the workspace.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

import orjson

from clawloop.errors import ClawloopError
from sandbox.base import Sandbox

Entry = dict[str, Any]
Snapshot = dict[str, Entry]
"""Relative path → entry, as `state_probe.snapshot` writes them."""

DEFAULT_FILE_MODE = 0o644
DEFAULT_DIR_MODE = 0o755
CHECKER_NAME = "check_state.py"
EXPECTED_NAME = "expected.json"


@cache
def probe_source() -> str:
    """The text of state_probe.py (shipped into the sandbox on stdin, and as the verifier)."""
    return resources.files("clawloop.phases.synthesize.grounded").joinpath("state_probe.py").read_text("utf-8")


def take_snapshot(sb: Sandbox, root: str = "/workspace", *, timeout: float = 60.0,
                  max_entries: int = 20000) -> tuple[Snapshot, bool]:
    """(entries, truncated) of the state under `root`; runs the probe without writing any file."""
    marker = "CLAWLOOP_STATE_PROBE_EOF"
    cmd = (f"python3 -S - snapshot {shlex.quote(root)} {int(max_entries)} <<'{marker}'\n"
           f"{probe_source()}\n{marker}\n")
    r = sb.exec(cmd, timeout=timeout, cwd="/")
    if r.exit_code != 0 or r.truncated:
        why = "output too long" if r.truncated else f"exit status {r.exit_code}"
        raise ClawloopError(f"state snapshot of {root} failed ({why}): {r.output.strip()[-300:]}")
    try:
        obj = orjson.loads(r.output.strip().splitlines()[-1])
    except (orjson.JSONDecodeError, IndexError):
        raise ClawloopError(f"state snapshot of {root}: unreadable output {r.output[-200:]!r}") from None
    return obj["entries"], bool(obj["truncated"])


@dataclass(frozen=True)
class Change:
    """One difference between two snapshots (paths relative to the root)."""

    kind: Literal["created", "modified", "deleted", "mode", "retyped"]
    path: str
    before: Entry | None
    after: Entry | None

    @property
    def type(self) -> str:
        """Type of the thing now there ("f", "d", "l", "o"), or of what was deleted."""
        e = self.after if self.after is not None else self.before
        return str(e["t"]) if e else "?"


def _same(a: Entry, b: Entry) -> bool:
    if a["t"] != b["t"]:
        return False
    if a["t"] == "f":
        return bool(a.get("sha256") == b.get("sha256") and a.get("mode") == b.get("mode"))
    if a["t"] == "l":
        return bool(a.get("target") == b.get("target"))
    return bool(a.get("mode") == b.get("mode"))


def diff(before: Snapshot, after: Snapshot) -> list[Change]:
    """The changes from `before` to `after`, sorted by path."""
    out: list[Change] = []
    for p in sorted(set(before) | set(after)):
        b, a = before.get(p), after.get(p)
        if b is None and a is not None:
            out.append(Change("created", p, None, a))
        elif a is None and b is not None:
            out.append(Change("deleted", p, b, None))
        elif a is not None and b is not None and not _same(b, a):
            if a["t"] != b["t"]:
                out.append(Change("retyped", p, b, a))
            elif a["t"] == "f" and a.get("sha256") == b.get("sha256") or a["t"] in ("d", "o"):
                out.append(Change("mode", p, b, a))
            else:
                out.append(Change("modified", p, b, a))
    return out


def _under(path: str, parent: str) -> bool:
    return path.startswith(parent + "/")


def topmost_deletions(changes: list[Change]) -> list[Change]:
    """Deletions whose parent directory was not deleted too."""
    gone = [c.path for c in changes if c.kind == "deleted" and c.type == "d"]
    return [c for c in changes if c.kind == "deleted" and not any(_under(c.path, g) for g in gone)]


def essential(changes: list[Change]) -> list[Change]:
    """The changes a task must state: deletions inside deleted trees and created directories that
    only hold other created paths (with the default mode) are implied and dropped."""
    created = [c.path for c in changes if c.kind in ("created", "retyped")]
    top = {id(c) for c in topmost_deletions(changes)}
    out = []
    for c in changes:
        if c.kind == "deleted" and id(c) not in top:
            continue
        if (c.kind == "created" and c.type == "d" and c.after and c.after.get("mode") == DEFAULT_DIR_MODE
                and any(_under(p, c.path) for p in created)):
            continue
        out.append(c)
    return out


def absolute(root: str, rel: str) -> str:
    return posixpath.normpath(posixpath.join(root, rel))


def _creation_checks(path: str, e: Entry, mode_changed: bool) -> list[dict[str, Any]]:
    if e["t"] == "f":
        c: dict[str, Any] = {"t": "file", "path": path, "sha256": e["sha256"]}
        if mode_changed or e.get("mode") != DEFAULT_FILE_MODE:
            c["mode"] = e["mode"]
        return [c]
    if e["t"] == "d":
        c = {"t": "dir", "path": path}
        if mode_changed or e.get("mode") != DEFAULT_DIR_MODE:
            c["mode"] = e["mode"]
        return [c]
    if e["t"] == "l":
        return [{"t": "link", "path": path, "target": e["target"], "resolves": e["real"]}]
    raise ClawloopError(f"{path}: cannot check a created special file")


def expected_checks(changes: list[Change], before: Snapshot, root: str, *, keep_untouched: bool = True,
                    max_keep: int = 500, skip: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The verifier checks that pin down `changes` (see the module docstring for the rules);
    `skip`: seeded paths not to keep (their content differs from one setup to the next)."""
    checks: list[dict[str, Any]] = []
    for c in essential(changes):
        path = absolute(root, c.path)
        if c.kind == "deleted":
            checks.append({"t": "absent", "path": path})
        elif c.kind == "mode":
            assert c.after is not None
            checks.append({"t": "mode", "path": path, "mode": c.after["mode"]})
        else:
            assert c.after is not None
            mode_changed = c.before is not None and c.before.get("mode") != c.after.get("mode")
            checks.extend(_creation_checks(path, c.after, mode_changed))
    if keep_untouched:
        touched = {c.path for c in changes}
        gone = [c.path for c in changes if c.kind in ("deleted", "retyped")]
        keep = [p for p, e in sorted(before.items()) if e["t"] == "f" and e.get("sha256")
                and p not in touched and p not in skip and not any(_under(p, g) for g in gone)]
        checks.extend({"t": "file", "path": absolute(root, p), "sha256": before[p]["sha256"], "keep": True}
                      for p in keep[:max_keep])
    return checks


def expected_json(checks: list[dict[str, Any]], root: str) -> str:
    """The verifier's expected.json text."""
    return orjson.dumps({"version": 1, "root": root, "checks": checks},
                        option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"


TEST_SH = f"""#!/bin/bash
# Hindsight task verifier: reward 1 when the workspace holds the expected state.
mkdir -p /logs/verifier
if python3 /tests/{CHECKER_NAME} /tests/{EXPECTED_NAME}; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def verifier_files(checks: list[dict[str, Any]], root: str) -> dict[str, tuple[str, int]]:
    """name → (text, mode) of the verifier: test.sh, the checker and expected.json."""
    return {"test.sh": (TEST_SH, 0o755), CHECKER_NAME: (probe_source(), 0o644),
            EXPECTED_NAME: (expected_json(checks, root), 0o644)}
