"""Claw-Eval-Live grading on the host: the episode's transcript in the benchmark's trace shapes,
the task's own grader.py run against it and the sandbox snapshot, and the verdict.

Apart from the loader (clawloop.core.tasks.claw_eval_live) because this side imports and runs the
benchmark's Python package in this process (`grader_root`), under a lock, which reading a task
directory never needs.

grader.py is Python from the task, run in this process: it runs only under a grader root the user
named (`--grader-root`, a loader's argument, $CLAWLOOP_GRADER_ROOT), the user's consent to run
that suite's graders. A root that only a task record names (a pool line pulled from a remote, a
Harbor directory's metadata) is refused before anything is imported, and only a root the user
named goes on sys.path.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import os
import re
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clawloop.core.tasks.claw_eval_live import GRADER_ROOT_ENV, KEY, PASS_THRESHOLD, trusted_grader_root
from clawloop.core.tasks.task import Task
from clawloop.core.tasks.verifier import Verdict, read_logs_file, run_verifier
from clawloop.errors import ClawloopError
from sandbox.base import Sandbox, SandboxError

SNAPSHOT_MAX_BYTES = 64 << 20
"""Largest snapshot.json read back (files are capped by the snapshot step, not by the sandbox)."""
_LOCK = threading.Lock()


class GradingError(ClawloopError):
    """The host-side grader could not give a score (outcome "error", never failed)."""


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
def _ns(obj: Any) -> Any:
    if isinstance(obj, dict):
        return types.SimpleNamespace(**{k: _ns(v) for k, v in obj.items() if isinstance(k, str)})
    return [_ns(x) for x in obj] if isinstance(obj, list) else obj


def _plain_message(d: dict[str, Any]) -> Any:
    text = d["message"]["content"]
    msg = types.SimpleNamespace(role=d["message"]["role"], text=text,
                                content=[types.SimpleNamespace(type="text", text=text)])
    return types.SimpleNamespace(type="message", trace_id=d["trace_id"], message=msg)


def _model(module: types.ModuleType, grader_cls: type, name: str, submodule: str) -> Any:
    """The benchmark's model class `name`: from grader.py's globals, else <package>.<submodule>."""
    if isinstance(getattr(module, name, None), type):
        return module.__dict__[name]
    for base in grader_cls.__mro__:
        top = base.__module__.split(".")[0]
        if top not in (module.__name__, "builtins", "abc"):
            with contextlib.suppress(ImportError):
                return getattr(importlib.import_module(f"{top}.{submodule}"), name, None)
    return None


def _build(cls: Any, data: dict[str, Any], fallback: Any) -> Any:
    if cls is not None and hasattr(cls, "model_validate"):
        return cls.model_validate(data)
    return fallback(data)


def _load_module(task: Task, rec: dict[str, Any]) -> types.ModuleType:
    name = f"clawloop_claw_eval_grader_{task.id}"
    if name in sys.modules:
        return sys.modules[name]
    filename = str(Path(rec.get("task_dir") or ".") / "grader.py")
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module
    try:
        exec(compile(task.verifier.files["grader.py"].data(), filename, "exec"), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _grader_class(module: types.ModuleType) -> type:
    classes = [c for c in vars(module).values() if isinstance(c, type) and c.__module__ == module.__name__
               and callable(getattr(c, "grade", None)) and not inspect.isabstract(c)]
    if not classes:
        raise GradingError("grader.py defines no grader class (a class with a grade method)")
    preferred = [c for c in classes if any(b.__name__ == "AbstractGrader" for b in c.__mro__[1:])]
    return (preferred or classes)[0]


def _scores(result: Any) -> dict[str, Any]:
    if hasattr(result, "model_dump"):
        result = result.model_dump()
    elif not isinstance(result, dict):
        result = dict(vars(result)) if hasattr(result, "__dict__") else {}
    return {k: v for k, v in result.items() if isinstance(v, int | float | str | bool) or v is None}


def _where(e: BaseException) -> str:
    tb = e.__traceback__
    last = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith("grader.py"):
            last = tb.tb_lineno
        tb = tb.tb_next
    return f" (grader.py line {last})" if last else ""


def grade(task: Task, snapshot: dict[str, Any], messages: list[dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    """(completion, all dimension scores) from the task's own grader; GradingError when none comes."""
    rec = task.metadata.get(KEY) or {}
    named = rec.get("grader_root")
    if named is not None and not (isinstance(named, str) and trusted_grader_root(named)):
        raise GradingError(f"metadata.{KEY}.grader_root {str(named)[:200]!r}: named by the task, not by the user "
                           "(--grader-root): a task never picks the code run on the host")
    root = named or os.environ.get(GRADER_ROOT_ENV)
    if not root:
        raise GradingError("grader package not available: give --grader-root (a Claw-Eval-Live checkout)")
    if not Path(root).is_dir():
        raise GradingError(f"grader package not available: --grader-root {root} is not a directory")
    with _LOCK:
        for p in (Path(root), Path(root) / "src"):
            if p.is_dir() and str(p) not in sys.path:
                sys.path.insert(0, str(p))
        try:
            module = _load_module(task, rec)
        except ImportError as e:
            raise GradingError(f"grader package not available under --grader-root {root}: {e}") from None
        except Exception as e:
            raise GradingError(f"grader.py failed to import: {type(e).__name__}: {e}{_where(e)}") from None
        cls = _grader_class(module)
        trace_id = f"clawloop-{task.id}"
        msgs, calls = _trace(messages, trace_id)
        task_cls = _model(module, cls, "TaskDefinition", "models.task")
        msg_cls = _model(module, cls, "TraceMessage", "models.trace")
        call_cls = _model(module, cls, "ToolDispatch", "models.trace")
        try:
            task_def = _build(task_cls, {**rec.get("task_yaml", {}), "task_file": str(
                Path(rec.get("task_dir") or ".") / "task.yaml")}, _ns)
            trace = [_build(msg_cls, m, _plain_message) for m in msgs]
            dispatches = [_build(call_cls, d, _ns) for d in calls]
        except (ValidationError, TypeError, ValueError) as e:
            raise GradingError(f"cannot build the grader's inputs: {str(e).splitlines()[0]}") from None
        try:
            grader = cls()
            params = inspect.signature(grader.grade).parameters
            kwargs: dict[str, Any] = {"audit_data": None, "judge": None}
            if "media_events" in params:
                kwargs["media_events"] = []
            if "env_snapshot" in params:
                kwargs["env_snapshot"] = snapshot
            result = grader.grade(trace, dispatches, task_def, **kwargs)
        except Exception as e:
            raise GradingError(f"grader crashed: {type(e).__name__}: {e}{_where(e)}"[:500]) from None
    scores = _scores(result)
    completion = scores.get("completion")
    if isinstance(completion, bool) or not isinstance(completion, int | float) or not 0 <= completion <= 1:
        raise GradingError(f"grader returned no completion score in [0, 1] ({str(scores)[:120]})")
    return round(float(completion), 4), scores


# ------------------------------------------------------------------------------- verification
def verify_claw_eval(sb: Sandbox, task: Task, messages: list[dict[str, Any]] | None = None) -> Verdict:
    """Snapshot in the sandbox (the verifier's clean world of `run_verifier`), then grade on the host."""
    t0 = time.monotonic()
    with run_verifier(sb, task) as run:
        r, took = run.result, run.duration_s
        if r.timed_out:
            return Verdict("error", None, f"snapshot timed out after {task.limits.verifier_timeout_s:g}s",
                                 r.output, took)
        try:
            snapshot = json.loads(read_logs_file(run.logs, "snapshot.json", SNAPSHOT_MAX_BYTES) or b"")
        except (SandboxError, json.JSONDecodeError, UnicodeDecodeError):
            return Verdict("error", None, f"the snapshot step wrote no snapshot (exit status {r.exit_code})",
                                 r.output, took)
        try:
            completion, scores = grade(task, snapshot, messages or [{"role": "user", "content": task.instruction}])
        except GradingError as e:
            return Verdict("error", None, str(e), r.output, time.monotonic() - t0)
        threshold = float((task.metadata.get(KEY) or {}).get("pass_threshold", PASS_THRESHOLD))
        outcome = "passed" if completion >= threshold else "failed"
        out = f"{r.output}\n[clawloop] scores: {json.dumps(scores, sort_keys=True)}".lstrip("\n")
        return Verdict(outcome, completion, None, out, time.monotonic() - t0, scores=scores)
