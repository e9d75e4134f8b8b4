"""ClawGym-Bench task directories → Task records.

Layout (as ClawGym-Agents publishes it, `RL/data/DATASET_README.md`): one directory per task,
`data_entry.json` (`task_id`, `user_query` = the instruction, `input_mount_dir`, `metadata`), an
optional `input_files/` tree copied verbatim into `input_mount_dir` (usually
/root/.openclaw/workspace), and `reward/` with the `reward.sh` entry point plus helpers
(`check.py`). After the agent ends, `reward/` is copied to the workspace's `reward/`, reward.sh
runs, and the LAST line of its stdout is one float in [0, 1] (partial credit is normal).

Mapping: user_query → instruction; input_files/** → files under the mount dir; the agent starts
in /root/.openclaw/workspace; reward/** → verifier files `reward/...` with a generated entry
`test.sh` (the wrapper below) that copies /tests/reward → /root/.openclaw/workspace/reward (where
ClawGym's runner puts it, whatever the mount dir), runs reward.sh there and writes the last
stdout line, parsed as a float, to /logs/verifier/reward.txt. A task passes
only at 1.0; the summary reports the mean score beside. `metadata.category` → skill. The
original data_entry.json is kept in `metadata["clawgym"]`.

clawloop-only addition: `solution/solve.sh` (+ helpers) beside data_entry.json is the reference
solution run by `--agent oracle` (ClawGym itself ships none).

Differences from ClawGym's own runner: a reward.sh that exits non-zero, prints no float, or
prints one outside [0, 1] is an episode ERROR here (ClawGym scores it 0.0), so a broken grader
never reads as a failed agent. `OPENCLAW_REWARD_PAYLOAD` points at a payload with the task's
fields but an empty `final_message` and `transcript` (chat-graded tasks cannot pass yet).
"""

from __future__ import annotations

import json
import posixpath
import shlex
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from clawloop.core.tasks.file_tree import ReadBudget, find_dirs, read_file, read_tree
from clawloop.core.tasks.task import FileSpec, Limits, Provenance, Solution, Task, Verifier
from clawloop.errors import ClawloopError, describe_validation_error

KEY = "clawgym"
"""`Task.metadata` key holding the original data_entry.json and the directory name."""
WORKSPACE = "/root/.openclaw/workspace"
"""The OpenClaw agent's workspace: the default mount dir and the agent's working directory."""
ENTRY = "data_entry.json"
ERROR_MARK = "clawloop-reward-error:"
"""Prefix of the wrapper's last output line when reward.sh gave no usable score."""
REWARD_TIMEOUT_S = 120.0
"""ClawGym's own reward timeout."""
SOLVE_STEP = "bash /solution/solve.sh"

_WRAPPER = r"""#!/bin/bash
# clawloop: ClawGym adapter. reward/ goes to <workspace>/reward, reward.sh runs there, and the
# last non-empty line of its stdout (one float in [0, 1]) becomes /logs/verifier/reward.txt.
WS=__WORKSPACE__
fail() { echo "__MARK__ $*"; exit 1; }
mkdir -p "$WS" && rm -rf "$WS/reward" && cp -r /tests/reward "$WS/reward" \
  || fail "cannot copy reward/ to $WS/reward"
cp /tests/clawloop_payload.json "$WS/.openclaw_reward_payload.json" 2>/dev/null
export OPENCLAW_REWARD_PAYLOAD="$WS/.openclaw_reward_payload.json"
out=$(mktemp) || fail "mktemp failed"
cd "$WS" || fail "cannot enter $WS"
bash "$WS/reward/reward.sh" > "$out"
status=$?
cat "$out"
last=$(grep -v '^[[:space:]]*$' "$out" | tail -n 1 | tr -d '[:space:]')
rm -f "$out"
[ "$status" -eq 0 ] || fail "reward.sh exited with status $status"
if ! printf '%s' "$last" | grep -Eq '^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$'; then
  fail "reward.sh printed no float (last line: '${last:0:80}')"
fi
if ! awk -v x="$last" 'BEGIN { exit !(x + 0 >= 0 && x + 0 <= 1) }'; then
  fail "reward.sh printed $last, outside [0, 1]"
fi
mkdir -p /logs/verifier && printf '%s\n' "$last" > /logs/verifier/reward.txt
"""


def wrapper_script() -> str:
    """The generated verifier entry (the same for every task)."""
    return _WRAPPER.replace("__MARK__", ERROR_MARK).replace("__WORKSPACE__", shlex.quote(WORKSPACE))


def is_clawgym_task(path: Path) -> bool:
    return (path / ENTRY).is_file()


def find_clawgym_dirs(root: str | Path) -> list[Path]:
    """Task directories (holding data_entry.json) at `root` or up to two levels below, sorted."""
    return find_dirs(root, is_clawgym_task, depth=2, skip=lambda d: d.startswith((".", "_")))


def _string(entry: dict[str, Any], key: str, where: str, *, required: bool) -> str | None:
    v = entry.get(key)
    if v is None or (isinstance(v, str) and not v.strip() and required):
        if required:
            raise ClawloopError(f"{where}: {key}: missing" if v is None else f"{where}: {key}: empty")
        return None
    if not isinstance(v, str):
        raise ClawloopError(f"{where}: {key}: expected a string, got {type(v).__name__}")
    return v


def load_clawgym_task(path: str | Path, *, source: str | None = None) -> Task:
    """Read one ClawGym task directory; bad input raises ClawloopError naming file and field."""
    path = Path(path)
    where = f"{path}/{ENTRY}"
    budget = ReadBudget()
    try:
        entry = orjson.loads(read_file(path / ENTRY, budget))
    except orjson.JSONDecodeError as e:
        raise ClawloopError(f"{where}: not valid JSON ({e})") from None
    if not isinstance(entry, dict):
        raise ClawloopError(f"{where}: expected a JSON object")
    query = _string(entry, "user_query", where, required=True)
    assert query is not None
    task_id = _string(entry, "task_id", where, required=False) or path.name
    mount = _string(entry, "input_mount_dir", where, required=False) or WORKSPACE
    if not mount.startswith("/") or ".." in mount.split("/"):
        raise ClawloopError(f"{where}: input_mount_dir: must be an absolute path without '..' ({mount!r})")
    mount = posixpath.normpath(mount)
    meta = entry.get("metadata", {})
    if not isinstance(meta, dict):
        raise ClawloopError(f"{where}: metadata: expected an object")

    inputs = read_tree(path / "input_files", budget=budget, within=path)
    if inputs and entry.get("input_mount_dir") is None:
        raise ClawloopError(f"{where}: input_mount_dir: missing but input_files/ is not empty")
    reward = read_tree(path / "reward", budget=budget, within=path)
    if "reward.sh" not in reward:
        raise ClawloopError(f"{path}/reward/reward.sh: file not found")
    payload = {"task_id": task_id, "user_query": query, "metadata": meta, "final_message": "", "transcript": []}
    tests = {f"reward/{rel}": spec for rel, spec in reward.items()}
    tests["test.sh"] = FileSpec.of(wrapper_script(), 0o755)
    tests["clawloop_payload.json"] = FileSpec.of(json.dumps(payload, ensure_ascii=False, indent=1))

    sol_files = read_tree(path / "solution", budget=budget, within=path)
    solution = Solution(steps=[SOLVE_STEP], files=sol_files) if "solve.sh" in sol_files else None
    category = meta.get("category")
    record = {"name": path.name, "format": "clawgym", "data_entry": entry}
    try:
        return Task(
            instruction=query, files={posixpath.join(mount, rel): spec for rel, spec in inputs.items()},
            workdir=WORKSPACE, verifier=Verifier(files=tests, entry="test.sh"), solution=solution,
            skill=category if isinstance(category, str) and category.strip() else "general",
            tags=("clawgym",), source=source or path.resolve().parent.name,
            limits=Limits(verifier_timeout_s=REWARD_TIMEOUT_S), provenance=Provenance(routine="clawgym"),
            metadata={KEY: record},
        )
    except ValidationError as e:
        raise ClawloopError(f"{path}: {describe_validation_error(e)}") from None


def reward_error(output: str) -> str | None:
    """The wrapper's reason (e.g. "reward.sh printed no float (...)") found in verifier output."""
    for line in reversed(output.strip().splitlines()[-20:]):
        if line.startswith(ERROR_MARK):
            return line[len(ERROR_MARK):].strip()
    return None


def is_clawgym(task: Task) -> bool:
    return isinstance(task.metadata.get(KEY), dict)
