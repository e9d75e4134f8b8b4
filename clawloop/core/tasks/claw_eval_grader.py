"""Claw-Eval-Live grading: runs INSIDE the sandbox, after the agent, as the verifier's entry.

Copied to /tests (as `clawloop_grader.py`, beside `clawloop_snapshot.py`, the task's own
`grader.py`, the benchmark's grading library under `grader_root/` and the episode's trace in
`clawloop_grading.json`, all written by the host) and run with the sandbox's python3 in isolated
mode (`-I`: neither the cwd, the agent's workdir, nor PYTHONPATH is on sys.path; only /tests and
the interpreter's own dirs are). It takes the environment snapshot (clawloop_snapshot.py), imports
grader.py with the library on sys.path, calls its grader class's `grade` with the trace and the
snapshot and writes /logs/verifier/reward.json: {"reward": completion, "scores": every dimension
score}. A grader that cannot give a score prints one `ERROR_MARK` line with the reason and writes
no reward. Stdlib only; what the library imports comes from the sandbox's python (the task
runtime, sandbox/runtime-requirements.txt: pydantic for the benchmark's models).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import os
import sys
import types
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = "clawloop_grading.json"
"""The host's part, beside this script: trace, tool dispatches, task definition."""
LIBRARY = "grader_root"
"""Dir beside this script holding the grading library's packages, as under the user's root."""
LIBRARY_PATHS = ("src", "")
"""Dirs of a grader root that go on sys.path, in this order: its src/ (the benchmark's layout), the root."""
REWARD = "/logs/verifier/reward.json"
ERROR_MARK = "[clawloop] grading error:"
"""Prefix of the line that says why no reward was written (the host's verdict reason)."""
MODULE = "clawloop_claw_eval_grader"


class GradingError(Exception):
    """The grader could not give a score (outcome "error", never failed)."""


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


def _load_module(path: str) -> types.ModuleType:
    module = types.ModuleType(MODULE)
    module.__file__ = path
    sys.modules[MODULE] = module
    with open(path, "rb") as f:
        exec(compile(f.read(), path, "exec"), module.__dict__)
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
    return {k: v for k, v in result.items() if isinstance(v, (int, float, str, bool)) or v is None}


def _where(e: BaseException) -> str:
    tb = e.__traceback__
    last = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith("grader.py"):
            last = tb.tb_lineno
        tb = tb.tb_next
    return f" (grader.py line {last})" if last else ""


def grade(inputs: dict[str, Any], snapshot: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """(completion, all dimension scores) from the task's own grader; GradingError when none comes."""
    sys.path[:0] = [os.path.normpath(os.path.join(HERE, LIBRARY, p)) for p in LIBRARY_PATHS]
    root = inputs.get("grader_root")
    try:
        module = _load_module(os.path.join(HERE, "grader.py"))
    except ImportError as e:
        raise GradingError(f"grader package not available under --grader-root {root}: {e}") from None
    except Exception as e:
        raise GradingError(f"grader.py failed to import: {type(e).__name__}: {e}{_where(e)}") from None
    cls = _grader_class(module)
    task_cls = _model(module, cls, "TaskDefinition", "models.task")
    msg_cls = _model(module, cls, "TraceMessage", "models.trace")
    call_cls = _model(module, cls, "ToolDispatch", "models.trace")
    try:
        task_def = _build(task_cls, inputs["task"], _ns)
        trace = [_build(msg_cls, m, _plain_message) for m in inputs["messages"]]
        dispatches = [_build(call_cls, d, _ns) for d in inputs["dispatches"]]
    except Exception as e:  # the library's ValidationError among them
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise GradingError(f"cannot build the grader's inputs: {first}") from None
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
    if isinstance(completion, bool) or not isinstance(completion, (int, float)) or not 0 <= completion <= 1:
        raise GradingError(f"grader returned no completion score in [0, 1] ({str(scores)[:120]})")
    return round(float(completion), 4), scores


def main() -> int:
    sys.path.insert(0, HERE)
    import clawloop_snapshot  # type: ignore[import-not-found]  # its sibling in /tests

    snapshot = clawloop_snapshot.main()
    with open(os.path.join(HERE, INPUTS), encoding="utf-8") as f:
        inputs = json.load(f)
    try:
        completion, scores = grade(inputs, snapshot)
    except GradingError as e:
        print(f"{ERROR_MARK} {e}", flush=True)
        return 1
    with open(REWARD, "w", encoding="utf-8") as f:
        json.dump({"reward": completion, "scores": scores}, f)
    print(f"[clawloop] scores: {json.dumps(scores, sort_keys=True)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
