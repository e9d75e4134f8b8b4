"""Claw-Eval-Live (LiveClaw-500) workspace tasks → Task records, graded in the sandbox.

Layout (Claw-Eval-Live/Claw-Eval-Live, `tasks/<id>/`): `task.yaml` (`task_id`, `prompt.text`,
`sandbox_files` copied to /workspace/<rel> before the agent, `sandbox_grader_files` copied in
only for grading, `env_snapshot_commands` / `env_snapshot_files` collected after the agent,
`environment.timeout_seconds|max_turns|env_snapshot_timeout`, `services`) and `grader.py`, whose
grader class (`grade(messages, dispatches, task, audit_data=None, judge=None, media_events=None,
env_snapshot=None)` → dimension scores) imports the benchmark's own package.

Mapping: prompt.text → instruction; sandbox_files → files under /workspace (a path missing
beside task.yaml is looked up in the checkout the user names, `--grader-root`, as the benchmark
looks it up from its checkout root; never in another directory above the task); category → skill;
difficulty → level; environment → limits. The verifier snapshots and grades in the sandbox
(`claw_eval_grader.py` as /tests/clawloop_grader.py): it places the grader files, records
`cmd:<command>` → {exit_code, stdout, stderr} and `file:<path>` entries (`claw_eval_snapshot.py`),
then runs grader.py (kept in the verifier files, so it is part of the task's identity) with the
sandbox's python and the benchmark's grading library, which the host copies in at grading time
from the checkout the user names as `grader_root` (`--grader-root`, or $CLAWLOOP_GRADER_ROOT;
a root a task record names itself, a pool line or a Harbor directory's metadata, is refused:
`trust_grader_root`, clawloop.core.tasks.claw_eval_grading), with the episode's transcript
(messages, and each bash call as a `sandbox_shell_exec` dispatch), and maps the result:

    reward = completion score (the benchmark's task score), passed iff completion >= 0.80
    (the benchmark's published pass threshold; `pass_threshold` changes it). Every dimension
    score (completion, robustness, safety, communication, ...) is kept in the record.

A grader that cannot be imported (no package, no --grader-root) or that raises is an ERROR with
the reason, never a pass or fail. Tasks with `services:` (the benchmark's mock HTTP services)
or `tool_endpoints:` are skipped with that reason (`needs_image` is set, so every runner skips
them). The original task.yaml is kept in `metadata["claw_eval_live"]`. clawloop-only addition:
`solution/solve.sh` beside task.yaml is the oracle's reference solution.

This module reads task directories; what the host adds at grading time is
clawloop.core.tasks.claw_eval_grading.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clawloop.core.tasks.documents import read_yaml
from clawloop.core.tasks.file_tree import ReadBudget, find_dirs, read_file, read_tree
from clawloop.core.tasks.task import FileSpec, Limits, Provenance, Solution, Task, Verifier
from clawloop.errors import ClawloopError, describe_validation_error

KEY = "claw_eval_live"
PASS_THRESHOLD = 0.80
"""Claw-Eval-Live's published pass threshold on the completion score."""
GRADER_ROOT_ENV = "CLAWLOOP_GRADER_ROOT"
WORKSPACE = "/workspace"
SOLVE_STEP = "bash /solution/solve.sh"
_DIFFICULTY = {"simple": 1, "easy": 1, "medium": 3, "hard": 5, "expert": 5}
_SNAPSHOT_SCRIPT = Path(__file__).with_name("claw_eval_snapshot.py")
_GRADER_SCRIPT = Path(__file__).with_name("claw_eval_grader.py")


# ---------------------------------------------------------------------------------- import
def _yaml(path: Path) -> Any:
    """The bounded reader of Harbor's YAML (aliases written out under a cap, depth capped)."""
    return read_yaml(read_file(path), str(path))


def is_claw_eval_task(path: Path) -> bool:
    """A task.yaml with a grader.py beside it, or whose YAML has `task_id` and a `prompt` mapping."""
    if not (path / "task.yaml").is_file():
        return False
    if (path / "grader.py").is_file():
        return True
    try:
        raw = _yaml(path / "task.yaml")
    except ClawloopError:
        return False
    return isinstance(raw, dict) and "task_id" in raw and isinstance(raw.get("prompt"), dict)


def find_claw_eval_dirs(root: str | Path) -> list[Path]:
    """Task directories at `root` or up to two levels below (a checkout's tasks/<id>/), sorted."""
    return find_dirs(root, is_claw_eval_task, depth=2, skip=lambda d: d.startswith((".", "_")))


def _str_list(raw: dict[str, Any], key: str, where: str) -> list[str]:
    v = raw.get(key) or []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ClawloopError(f"{where}: {key}: expected a list of strings")
    return v


_TRUSTED_ROOTS: set[str] = set()
"""Grader roots named by the user in this process (`--grader-root`, a loader's argument)."""


def trust_grader_root(root: str | Path) -> str:
    """Record `root` as named by the user (the command line, an API caller): its grading library
    may be copied into the verifiers of the tasks loaded with it. Returns its resolved path."""
    resolved = str(Path(root).resolve())
    _TRUSTED_ROOTS.add(resolved)
    return resolved


def trusted_grader_root(root: str | None) -> bool:
    """Whether `root` was named by the user: in this process, or as $CLAWLOOP_GRADER_ROOT."""
    if not root:
        return False
    env = os.environ.get(GRADER_ROOT_ENV)
    return str(Path(root).resolve()) in _TRUSTED_ROOTS | ({str(Path(env).resolve())} if env else set())


def _collect(task_dir: Path, rels: list[str], key: str, where: str, files_root: Path | None,
             budget: ReadBudget) -> dict[str, FileSpec]:
    """rel → spec for each listed file (a directory brings its whole tree), found beside task.yaml
    or else in `files_root` (a checkout the user named); never through a link out of either."""
    out: dict[str, FileSpec] = {}
    for i, rel in enumerate(rels):
        if rel.startswith("/") or ".." in rel.split("/") or "\0" in rel or not rel.strip("/"):
            raise ClawloopError(f"{where}: {key}[{i}]: must be relative without '..' ({rel!r})")
        base = task_dir
        if not os.path.lexists(task_dir / rel) and files_root is not None and os.path.lexists(files_root / rel):
            base = files_root
        src = base / rel
        if src.is_dir():  # read_tree refuses a link (on the way or inside) out of `base`
            out.update({f"{rel.rstrip('/')}/{k}": v for k, v in read_tree(src, budget=budget, within=base).items()})
        elif os.path.lexists(src):  # read_file refuses a link out of `base`, and what is no regular file
            out[rel] = FileSpec.of(read_file(src, budget, within=base), 0o755 if os.access(src, os.X_OK) else 0o644)
        else:
            hint = "" if files_root else " (a path beside task.yaml; one of the benchmark checkout needs --grader-root)"
            raise ClawloopError(f"{where}: {key}[{i}]: {rel} not found{hint}")
    return out


def load_claw_eval_task(path: str | Path, *, source: str | None = None, grader_root: str | Path | None = None,
                        pass_threshold: float = PASS_THRESHOLD) -> Task:
    """Read one Claw-Eval-Live task directory; bad input raises ClawloopError naming file and field."""
    path = Path(path)
    where = f"{path}/task.yaml"
    if not (path / "task.yaml").is_file():
        raise ClawloopError(f"{where}: file not found")
    raw = _yaml(path / "task.yaml")
    if not isinstance(raw, dict):
        raise ClawloopError(f"{where}: expected a mapping")
    if not isinstance(raw.get("task_id"), str) or not raw["task_id"].strip():
        raise ClawloopError(f"{where}: task_id: missing")
    prompt = raw.get("prompt")
    text = prompt.get("text") if isinstance(prompt, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise ClawloopError(f"{where}: prompt.text: missing")
    env = raw.get("environment") or {}
    if not isinstance(env, dict):
        raise ClawloopError(f"{where}: environment: expected a mapping")
    grader = path / "grader.py"
    if not grader.is_file():
        raise ClawloopError(f"{grader}: file not found")
    budget = ReadBudget()
    root = grader_root or os.environ.get(GRADER_ROOT_ENV)
    files_root = Path(root) if root else None
    commands = _str_list(raw, "env_snapshot_commands", where)
    snap_files = _str_list(raw, "env_snapshot_files", where)
    inputs = _collect(path, _str_list(raw, "sandbox_files", where), "sandbox_files", where, files_root, budget)
    grader_files = _collect(path, _str_list(raw, "sandbox_grader_files", where), "sandbox_grader_files", where,
                            files_root, budget)
    snap_timeout = float(env.get("env_snapshot_timeout") or 10)
    spec = {"grader_files": _str_list(raw, "sandbox_grader_files", where), "files": snap_files,
            "commands": commands, "timeout": snap_timeout}
    tests = {f"grader_files/{k}": v for k, v in grader_files.items()}
    tests.update({
        "grader.py": FileSpec.of(read_file(grader, budget)),
        "clawloop_snapshot.py": FileSpec.of(_SNAPSHOT_SCRIPT.read_text(encoding="utf-8")),
        "clawloop_snapshot_spec.json": FileSpec.of(json.dumps(spec, ensure_ascii=False, indent=1)),
        "clawloop_grader.py": FileSpec.of(_GRADER_SCRIPT.read_text(encoding="utf-8")),
        "test.sh": FileSpec.of("#!/bin/bash\n# clawloop: Claw-Eval-Live environment snapshot and grading\n"
                               "exec python3 -I /tests/clawloop_grader.py\n", 0o755),
    })
    services = [s.get("name", "?") if isinstance(s, dict) else str(s) for s in raw.get("services") or []]
    endpoints = raw.get("tool_endpoints") or []
    needs = (f"Claw-Eval-Live mock HTTP services ({', '.join(services)})" if services else
             "Claw-Eval-Live tool endpoints (mock HTTP services)" if endpoints else None)
    sol_files = read_tree(path / "solution", budget=budget, within=path)
    lim = {"verifier_timeout_s": len(commands) * snap_timeout + 60.0}
    if isinstance(env.get("timeout_seconds"), int | float) and env["timeout_seconds"] > 0:
        lim["agent_timeout_s"] = float(env["timeout_seconds"])
    if isinstance(env.get("max_turns"), int) and env["max_turns"] > 0:
        lim["max_turns"] = env["max_turns"]
    # Only a root the caller names is recorded (and trusted); $CLAWLOOP_GRADER_ROOT is read when
    # grading, so a pool written here carries no host path of this machine's.
    record = {"name": path.name, "format": "claw-eval-live", "task_yaml": raw, "task_dir": str(path.resolve()),
              "grader_root": trust_grader_root(grader_root) if grader_root else None,
              "pass_threshold": pass_threshold,
              "skip_reason": f"needs {needs}" if needs else None}
    diff = str(raw.get("difficulty") or "").lower()
    try:
        return Task(
            instruction=text, files={f"{WORKSPACE}/{k}": v for k, v in inputs.items()}, workdir=WORKSPACE,
            verifier=Verifier(files=tests, entry="test.sh"),
            solution=Solution(steps=[SOLVE_STEP], files=sol_files) if "solve.sh" in sol_files else None,
            skill=str(raw.get("category") or "general"), level=_DIFFICULTY.get(diff, 3) if diff else 1,
            tags=(*(str(t) for t in raw.get("tags") or ()), "claw-eval-live"),
            source=source or path.resolve().parent.name, needs_image=needs, limits=Limits(**lim),
            provenance=Provenance(routine="claw-eval-live"), metadata={KEY: record},
        )
    except ValidationError as e:
        raise ClawloopError(f"{path}: {describe_validation_error(e)}") from None


def without_grader_root(task: Task) -> Task:
    """`task` as a pool line carries it: no grader root (a host path of this machine, and one that
    grading refuses from a record: the user names it again where the pool is graded)."""
    rec = task.metadata.get(KEY)
    if not isinstance(rec, dict) or rec.get("grader_root") is None:
        return task
    return task.model_copy(update={"metadata": {**task.metadata, KEY: {**rec, "grader_root": None}}})


def is_claw_eval(task: Task) -> bool:
    return isinstance(task.metadata.get(KEY), dict)


def skip_reason(task: Task) -> str | None:
    """Why a Claw-Eval-Live task cannot run here at all (mock services), else None."""
    rec = task.metadata.get(KEY)
    return rec.get("skip_reason") if isinstance(rec, dict) else None
