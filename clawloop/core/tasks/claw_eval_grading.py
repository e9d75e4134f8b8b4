"""Claw-Eval-Live grading, the host's side: the episode's transcript in the benchmark's trace
shapes, and the verifier that grades it in the sandbox.

Nothing of the benchmark's runs on the host. The task's own grader.py and the benchmark's
grading library (the packages of the grader root the user named: `--grader-root`, a loader's
argument, $CLAWLOOP_GRADER_ROOT) are copied into the verifier's files with the trace, and the
verifier (claw_eval_grader.py, as /tests/clawloop_grader.py) snapshots the environment and runs
the grader there, with the sandbox's python, seeing only what any verifier sees; its reward.json
is read as every verifier's is (`verdict`). A root that only a task record names (a pool line
pulled from a remote, a Harbor directory's metadata) is refused before anything is read: a task
never picks which host files go into its sandbox.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import orjson

from clawloop.core.tasks.claw_eval_grader import ERROR_MARK, INPUTS, LIBRARY, LIBRARY_PATHS
from clawloop.core.tasks.claw_eval_live import GRADER_ROOT_ENV, KEY, PASS_THRESHOLD, trusted_grader_root
from clawloop.core.tasks.file_tree import ReadBudget, read_file, read_tree
from clawloop.core.tasks.task import FileSpec, Task, Verifier
from clawloop.core.tasks.verifier import REWARD_MAX_BYTES, Verdict, read_logs_file, run_verifier, verdict
from clawloop.errors import ClawloopError
from sandbox.base import Sandbox, SandboxError


class GradingError(ClawloopError):
    """No grader can run: no grader root, or one the task named (outcome "error", never failed)."""


# ------------------------------------------------------------------------------ transcript
_EXIT = re.compile(r"\[exit code (-?\d+)\]\s*$")


def transcript_from_steps(task: Task, steps: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-style messages for a scripted agent: the prompt, then one bash call per step."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": task.instruction}]
    for cmd, res in steps:
        msgs.append({"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": cmd})}}]})
        msgs.append({"role": "tool", "name": "bash", "content": f"{res.output}\n[exit code {res.exit_code}]"})
    return msgs


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return content if isinstance(content, str) else ""


def _trace(messages: list[dict[str, Any]], trace_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(trace messages, tool dispatches) as plain dicts in the benchmark's trace shapes."""
    out: list[dict[str, Any]] = []
    dispatches: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role == "tool":
            body = _text(m.get("content"))
            code = _EXIT.search(body)
            call = pending.pop(0) if pending else None
            if call is not None:
                call["response_body"] = {"exit_code": int(code.group(1)) if code else None,
                                         "stdout": _EXIT.sub("", body).rstrip("\n"), "stderr": ""}
            role = "user"
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", {}) if isinstance(tc, dict) else {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except (TypeError, json.JSONDecodeError):
                args = {"raw": fn.get("arguments")}
            name = "sandbox_shell_exec" if fn.get("name") == "bash" else str(fn.get("name"))
            d = {"trace_id": trace_id, "tool_use_id": f"call_{len(dispatches)}", "tool_name": name,
                 "endpoint_url": f"clawloop://sandbox/{name}", "request_body": args if isinstance(args, dict)
                 else {"value": args}, "response_status": 200, "response_body": None}
            dispatches.append(d)
            pending.append(d)
        if role in ("user", "assistant", "system"):
            out.append({"trace_id": trace_id, "message": {"role": role, "content": _text(m.get("content"))}})
    return out, dispatches


# ----------------------------------------------------------------------------------- grading
def grader_root(task: Task) -> Path:
    """The grader root the user named for `task` (its record's, trusted, or $CLAWLOOP_GRADER_ROOT);
    GradingError when there is none, or when only the record names it."""
    named = (task.metadata.get(KEY) or {}).get("grader_root")
    if named is not None and not (isinstance(named, str) and trusted_grader_root(named)):
        raise GradingError(f"metadata.{KEY}.grader_root {str(named)[:200]!r}: named by the task, not by the user "
                           "(--grader-root): a task never picks which host files go into its sandbox")
    root = named or os.environ.get(GRADER_ROOT_ENV)
    if not root:
        raise GradingError("grader package not available: give --grader-root (a Claw-Eval-Live checkout)")
    if not Path(root).is_dir():
        raise GradingError(f"grader package not available: --grader-root {root} is not a directory")
    return Path(root)


def grader_library(root: Path) -> dict[str, FileSpec]:
    """The grading library under `root`, as verifier files under LIBRARY/: the Python packages
    (dirs with .py files at their top, namespace packages too) and modules of each LIBRARY_PATHS
    dir, never the rest of a checkout (its tasks), never through a link out of `root`."""
    budget = ReadBudget()
    out: dict[str, FileSpec] = {}
    for sub in LIBRARY_PATHS:
        base = root / sub
        if not base.is_dir():
            continue
        for entry in sorted(base.iterdir()):
            rel = "/".join(p for p in (LIBRARY, sub, entry.name) if p)
            if entry.is_dir() and any(entry.glob("*.py")):
                out.update({f"{rel}/{k}": v for k, v in read_tree(entry, budget=budget, within=root).items()})
            elif entry.suffix == ".py" and entry.is_file():
                out[rel] = FileSpec.of(read_file(entry, budget, within=root))
    return out


def grading_files(task: Task, messages: list[dict[str, Any]], root: Path) -> dict[str, FileSpec]:
    """What the host adds to the task's verifier files for one grading: the library, and the
    trace and task definition the grader receives."""
    rec = task.metadata.get(KEY) or {}
    trace_id = f"clawloop-{task.id}"
    msgs, calls = _trace(messages, trace_id)
    task_def = {**rec.get("task_yaml", {}), "task_file": str(Path(rec.get("task_dir") or ".") / "task.yaml")}
    inputs = {"grader_root": str(root), "messages": msgs, "dispatches": calls, "task": task_def}
    return {**grader_library(root), INPUTS: FileSpec.of(json.dumps(inputs, ensure_ascii=False))}


# ------------------------------------------------------------------------------- verification
def _scores(logs: Path) -> dict[str, Any] | None:
    try:
        obj = orjson.loads(read_logs_file(logs, "reward.json", REWARD_MAX_BYTES) or b"{}")
    except (SandboxError, orjson.JSONDecodeError):
        return None
    scores = obj.get("scores") if isinstance(obj, dict) else None
    return scores if isinstance(scores, dict) else None


def _grading_error(output: str) -> str | None:
    """The grader's reason (ERROR_MARK line) in the verifier's output."""
    for line in reversed(output.strip().splitlines()[-20:]):
        if line.startswith(ERROR_MARK):
            return line[len(ERROR_MARK):].strip()
    return None


def verify_claw_eval(sb: Sandbox, task: Task, messages: list[dict[str, Any]] | None = None) -> Verdict:
    """Snapshot and grade in the sandbox (the verifier's clean world of `run_verifier`); passed iff
    the completion score reaches the task's threshold."""
    t0 = time.monotonic()
    try:
        root = grader_root(task)
        extra = grading_files(task, messages or [{"role": "user", "content": task.instruction}], root)
    except ClawloopError as e:
        return Verdict("error", None, str(e), "", time.monotonic() - t0)
    graded = task.model_copy(update={"verifier": Verifier(files={**task.verifier.files, **extra},
                                                          entry=task.verifier.entry)})
    with run_verifier(sb, graded) as run:
        v = verdict(run.logs, run.result, task.limits.verifier_timeout_s, run.duration_s)
        scores = _scores(run.logs)
    if v.outcome == "error" or v.reward is None:
        return Verdict("error", None, _grading_error(v.output) or v.reason, v.output, v.duration_s)
    threshold = float((task.metadata.get(KEY) or {}).get("pass_threshold", PASS_THRESHOLD))
    return Verdict("passed" if v.reward >= threshold else "failed", v.reward, None, v.output, v.duration_s,
                   scores=scores)
