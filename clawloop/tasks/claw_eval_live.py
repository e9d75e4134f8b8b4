"""Claw-Eval-Live (LiveClaw-500) workspace tasks → Task records, graded on the host.

Layout (Claw-Eval-Live/Claw-Eval-Live, `tasks/<id>/`): `task.yaml` (`task_id`, `prompt.text`,
`sandbox_files` copied to /workspace/<rel> before the agent, `sandbox_grader_files` copied in
only for grading, `env_snapshot_commands` / `env_snapshot_files` collected after the agent,
`environment.timeout_seconds|max_turns|env_snapshot_timeout`, `services`) and `grader.py`, whose
grader class (`grade(messages, dispatches, task, audit_data=None, judge=None, media_events=None,
env_snapshot=None)` → dimension scores) imports the benchmark's own package.

Mapping: prompt.text → instruction; sandbox_files → files under /workspace (a path missing
beside task.yaml is looked up from the checkout root, as the benchmark does); category → skill;
difficulty → level; environment → limits. The verifier is a snapshot step
(`claw_eval_snapshot.py`): it places the grader files and records `cmd:<command>` →
{exit_code, stdout, stderr} and `file:<path>` entries in /logs/verifier/snapshot.json. The host
then imports grader.py (kept in the verifier files, so it is part of the task's identity) with
the package of the checkout given as `grader_root` (`--grader-root`, or $CLAWLOOP_GRADER_ROOT),
calls `grade` with the episode's transcript (messages, and each bash call as a
`sandbox_shell_exec` dispatch) and the snapshot, and maps the result:

    reward = completion score (the benchmark's task score), passed iff completion >= 0.80
    (the benchmark's published pass threshold; `pass_threshold` changes it). Every dimension
    score (completion, robustness, safety, communication, ...) is kept in the record.

A grader that cannot be imported (no package, no --grader-root) or that raises is an ERROR with
the reason, never a pass or fail. Tasks with `services:` (the benchmark's mock HTTP services)
or `tool_endpoints:` are skipped with that reason (`needs_image` is set, so every runner skips
them). The original task.yaml is kept in `metadata["claw_eval_live"]`. clawloop-only addition:
`solution/solve.sh` beside task.yaml is the oracle's reference solution.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import threading
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clawloop.errors import ClawloopError
from clawloop.tasks.episode import Verdict
from clawloop.tasks.harbor import read_tree
from clawloop.tasks.model import FileSpec, Limits, Provenance, Solution, Task, Verifier
from clawloop.tasks.pool import describe_validation_error
from clawloop.tasks.verifier import read_logs_file, run_verifier
from sandbox.base import Sandbox, SandboxError

KEY = "claw_eval_live"
SNAPSHOT_MAX_BYTES = 64 << 20
"""Largest snapshot.json read back (files are capped by the snapshot step, not by the sandbox)."""
PASS_THRESHOLD = 0.80
"""Claw-Eval-Live's published pass threshold on the completion score."""
GRADER_ROOT_ENV = "CLAWLOOP_GRADER_ROOT"
WORKSPACE = "/workspace"
SOLVE_STEP = "bash /solution/solve.sh"
_DIFFICULTY = {"simple": 1, "easy": 1, "medium": 3, "hard": 5, "expert": 5}
_SNAPSHOT_SCRIPT = Path(__file__).with_name("claw_eval_snapshot.py")
_LOCK = threading.Lock()


class GradingError(ClawloopError):
    """The host-side grader could not give a score (outcome "error", never failed)."""


@dataclass(frozen=True)
class ScoredVerdict(Verdict):
    """A verdict with the grader's dimension scores (completion, robustness, safety, ...)."""

    scores: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------- import
def _yaml(path: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ClawloopError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None


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
    root = Path(root)
    if is_claw_eval_task(root):
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, _ in os.walk(root):
        p = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        if p != root and is_claw_eval_task(p):
            found.append(p)
            dirnames[:] = []
        elif len(p.relative_to(root).parts) >= 2:
            dirnames[:] = []
    return sorted(found)


def _str_list(raw: dict[str, Any], key: str, where: str) -> list[str]:
    v = raw.get(key) or []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ClawloopError(f"{where}: {key}: expected a list of strings")
    return v


def _project_root(task_dir: Path) -> Path:
    probe = task_dir.resolve()
    while probe.parent != probe:
        if (probe / "tasks").is_dir():
            return probe
        probe = probe.parent
    return task_dir.resolve().parent


def _collect(task_dir: Path, rels: list[str], key: str, where: str) -> dict[str, FileSpec]:
    """rel → spec for each listed file (a directory brings its whole tree)."""
    out: dict[str, FileSpec] = {}
    for i, rel in enumerate(rels):
        if rel.startswith("/") or ".." in rel.split("/"):
            raise ClawloopError(f"{where}: {key}[{i}]: must be relative without '..' ({rel!r})")
        src = task_dir / rel
        if not src.exists():
            src = _project_root(task_dir) / rel
        if src.is_dir():
            out.update({f"{rel.rstrip('/')}/{k}": v for k, v in read_tree(src).items()})
        elif src.is_file():
            out[rel] = FileSpec.of(src.read_bytes(), 0o755 if os.access(src, os.X_OK) else 0o644)
        else:
            raise ClawloopError(f"{where}: {key}[{i}]: {rel} not found")
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
    commands = _str_list(raw, "env_snapshot_commands", where)
    snap_files = _str_list(raw, "env_snapshot_files", where)
    inputs = _collect(path, _str_list(raw, "sandbox_files", where), "sandbox_files", where)
    grader_files = _collect(path, _str_list(raw, "sandbox_grader_files", where), "sandbox_grader_files", where)
    snap_timeout = float(env.get("env_snapshot_timeout") or 10)
    spec = {"grader_files": _str_list(raw, "sandbox_grader_files", where), "files": snap_files,
            "commands": commands, "timeout": snap_timeout}
    tests = {f"grader_files/{k}": v for k, v in grader_files.items()}
    tests.update({
        "grader.py": FileSpec.of(grader.read_bytes()),
        "clawloop_snapshot.py": FileSpec.of(_SNAPSHOT_SCRIPT.read_text(encoding="utf-8")),
        "clawloop_snapshot_spec.json": FileSpec.of(json.dumps(spec, ensure_ascii=False, indent=1)),
        "test.sh": FileSpec.of("#!/bin/bash\n# clawloop: Claw-Eval-Live environment snapshot; the host grades it\n"
                               "exec python3 /tests/clawloop_snapshot.py\n", 0o755),
    })
    services = [s.get("name", "?") if isinstance(s, dict) else str(s) for s in raw.get("services") or []]
    endpoints = raw.get("tool_endpoints") or []
    needs = (f"Claw-Eval-Live mock HTTP services ({', '.join(services)})" if services else
             "Claw-Eval-Live tool endpoints (mock HTTP services)" if endpoints else None)
    sol_files = read_tree(path / "solution")
    lim = {"verifier_timeout_s": len(commands) * snap_timeout + 60.0}
    if isinstance(env.get("timeout_seconds"), int | float) and env["timeout_seconds"] > 0:
        lim["agent_timeout_s"] = float(env["timeout_seconds"])
    if isinstance(env.get("max_turns"), int) and env["max_turns"] > 0:
        lim["max_turns"] = env["max_turns"]
    root = grader_root or os.environ.get(GRADER_ROOT_ENV)
    record = {"name": path.name, "format": "claw-eval-live", "task_yaml": raw, "task_dir": str(path.resolve()),
              "grader_root": str(Path(root).resolve()) if root else None, "pass_threshold": pass_threshold,
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


def is_claw_eval(task: Task) -> bool:
    return isinstance(task.metadata.get(KEY), dict)


def skip_reason(task: Task) -> str | None:
    """Why a Claw-Eval-Live task cannot run here at all (mock services), else None."""
    rec = task.metadata.get(KEY)
    return rec.get("skip_reason") if isinstance(rec, dict) else None


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
    root = rec.get("grader_root") or os.environ.get(GRADER_ROOT_ENV)
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
def verify_claw_eval(sb: Sandbox, task: Task, messages: list[dict[str, Any]] | None = None) -> ScoredVerdict:
    """Snapshot in the sandbox (the verifier's clean world of `run_verifier`), then grade on the host."""
    t0 = time.monotonic()
    with run_verifier(sb, task) as run:
        r, took = run.result, run.duration_s
        if r.timed_out:
            return ScoredVerdict("error", None, f"snapshot timed out after {task.limits.verifier_timeout_s:g}s",
                                 r.output, took)
        try:
            snapshot = json.loads(read_logs_file(run.logs, "snapshot.json", SNAPSHOT_MAX_BYTES) or b"")
        except (SandboxError, json.JSONDecodeError, UnicodeDecodeError):
            return ScoredVerdict("error", None, f"the snapshot step wrote no snapshot (exit status {r.exit_code})",
                                 r.output, took)
        try:
            completion, scores = grade(task, snapshot, messages or [{"role": "user", "content": task.instruction}])
        except GradingError as e:
            return ScoredVerdict("error", None, str(e), r.output, time.monotonic() - t0)
        threshold = float((task.metadata.get(KEY) or {}).get("pass_threshold", PASS_THRESHOLD))
        outcome = "passed" if completion >= threshold else "failed"
        out = f"{r.output}\n[clawloop] scores: {json.dumps(scores, sort_keys=True)}".lstrip("\n")
        return ScoredVerdict(outcome, completion, None, out, time.monotonic() - t0, scores)
