"""Task records → Harbor task directories (the inverse of clawloop.core.tasks.harbor's import).

An imported task whose original Dockerfile still yields its files, env, workdir and setup is
written back verbatim (task.toml's other fields too, from `metadata["harbor"]`); any other task
gets a generated Dockerfile (marked GENERATED_MARK) and its clawloop-only fields in
`[metadata.clawloop]` of task.toml.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

from clawloop.core.tasks.dockerfile_lite import parse_dockerfile
from clawloop.core.tasks.file_tree import check_tree, make_dirs_under, write_tree
from clawloop.core.tasks.harbor import (
    DEFAULT_IMAGE,
    DEFAULT_PROVENANCE,
    FORMAT_KEYS,
    GENERATED_MARK,
    HARBOR_KEY,
    SOLVE_STEP,
    entry_wrapper,
    solve_script,
)
from clawloop.core.tasks.image_needs import install_line, missing_interpreters, task_scripts
from clawloop.core.tasks.shell_lite import Runtime, detect_runtime
from clawloop.core.tasks.task import FileSpec, Limits, Task, path_problem
from clawloop.errors import ClawloopError


# ------------------------------------------------------------------------------------ TOML
def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k, ensure_ascii=False)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(repr(v), repr(v))
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items() if x is not None) + "}"
    raise ClawloopError(f"task.toml: cannot write a value of type {type(v).__name__}")


def dump_toml(data: dict[str, Any], _prefix: str = "") -> str:
    """A small TOML writer: scalars and arrays inline, nested dicts as [tables]."""
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in data.items()
             if v is not None and not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            name = f"{_prefix}.{_toml_key(k)}" if _prefix else _toml_key(k)
            body = dump_toml(v, name)
            lines.append(f"\n[{name}]" + ("\n" + body if body.strip() else ""))
    return "\n".join(lines).lstrip("\n") + ("\n" if lines else "")


# ---------------------------------------------------------------------------------- export
def _verbatim_ok(task: Task, h: dict[str, Any], runtime: Runtime) -> dict[str, FileSpec] | None:
    """The original environment/ files when its Dockerfile still yields this task, else None."""
    if not isinstance(h.get("dockerfile"), str):
        return None
    dirs = frozenset(h.get("environment_dirs") or ())
    context = {"Dockerfile": FileSpec.of(h["dockerfile"])}
    for k, v in (h.get("environment_files") or {}).items():
        context[k] = FileSpec.model_validate(v)
    for dest, src in (h.get("copy_sources") or {}).items():
        spec = task.files.get(dest)
        if spec is None or context.setdefault(src, spec).data() != spec.data():
            return None
    try:
        lr = parse_dockerfile(h["dockerfile"], context, runtime, context_dirs=dirs)
    except ClawloopError:
        return None
    same = (lr.files, lr.setup, lr.workdir, lr.env) == (task.files, task.setup, task.workdir, task.env)
    return context if same else None


def _generated_dockerfile(task: Task, image: str) -> tuple[str, dict[str, FileSpec]]:
    lines = [GENERATED_MARK, f"FROM {image}"]
    if missing := missing_interpreters("\n".join(lines), task_scripts(task)):
        lines.append(install_line(missing))  # before ENV: the task's env is not apt's
    for k, v in task.env.items():
        esc = v.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
        lines.append(f'ENV {k}="{esc}"')
    lines.append(f"WORKDIR {task.workdir}")
    context: dict[str, FileSpec] = {}
    for n, (dest, spec) in enumerate(sorted(task.files.items())):
        safe = re.fullmatch(r"[A-Za-z0-9._/-]+", dest) and "/." not in dest
        src = f"files{dest}" if safe else f"files/_{n}"
        context[src] = spec if spec.mode in (0o644, 0o755) else spec.model_copy(update={"mode": 0o644})
        chmod = f"--chmod={spec.mode:o} " if spec.mode not in (0o644, 0o755) else ""
        args = json.dumps([src, dest.replace("$", "\\$")], ensure_ascii=False)
        lines.append(f"COPY {chmod}{args}")
    for cmd in task.setup:
        simple = "\n" not in cmd and not cmd.rstrip().endswith("\\") and "<<" not in cmd \
            and not cmd.lstrip().startswith(("[", "-"))
        lines.append(f"RUN {cmd}" if simple else f"RUN <<'CLAWLOOP_EOF'\n{cmd}\nCLAWLOOP_EOF")
    return "\n".join(lines) + "\n", context


ADAPTER_GRADED = ("answer", "intercode", "claw_eval_live")
"""Format records whose tasks only their adapter can grade (ClawGym's standard verifier exports)."""


def _sub(sub: str, rel: str) -> str:
    """`rel` (a leading '/' dropped) as a path inside the task directory's `sub`: ClawloopError
    when it is empty or would leave it (a record built without validation still stops here)."""
    rel = rel.lstrip("/")
    if why := path_problem(rel):
        raise ClawloopError(f"{sub}: {rel!r}: {why}; nothing is written outside the task directory")
    return rel


def _put(files: dict[str, FileSpec], sub: str, specs: dict[str, FileSpec]) -> None:
    """Add `specs` to `files` under the task directory's `sub/`."""
    files.update((f"{sub}/{_sub(sub, k)}", v) for k, v in specs.items())


def harbor_tree(task: Task, runtime: Runtime | None = None) -> tuple[dict[str, FileSpec], list[str]]:
    """The files (path relative to the task directory → spec) and the empty directories of
    `task`'s Harbor directory; nothing is written. A task graded by its format's adapter beyond
    its verifier script (InterCode-Bash's gold replay, Claw-Eval-Live's grader) has no Harbor
    form: a ClawloopError names it."""
    if adapted := [k for k in ADAPTER_GRADED if k in task.metadata]:
        raise ClawloopError(f"task {task.id}: only clawloop's {adapted[0]} adapter can grade it, and a Harbor "
                            "directory cannot carry that (its import never trusts a format record): "
                            "write a pool (.jsonl) instead")
    runtime = runtime or detect_runtime()
    h = task.metadata.get(HARBOR_KEY) if isinstance(task.metadata.get(HARBOR_KEY), dict) else None
    raw: dict[str, Any] = copy.deepcopy(h.get("task_toml", {})) if h else {"version": "1.0"}
    meta = raw.setdefault("metadata", {})
    meta.update(skill=task.skill, level=task.level)
    if task.tags:
        meta["tags"] = list(task.tags)
    raw.setdefault("verifier", {})["timeout_sec"] = task.limits.verifier_timeout_s
    raw.setdefault("agent", {})["timeout_sec"] = task.limits.agent_timeout_s
    raw["source"] = task.source
    cl: dict[str, Any] = {}
    # A format's record (Claw-Eval-Live, ClawGym, InterCode) stays out: the import refuses it from
    # a Harbor directory, whose verifier is then the plain test.sh Harbor itself would run.
    extra = {k: v for k, v in task.metadata.items() if (k != HARBOR_KEY or not h) and k not in FORMAT_KEYS}
    if not h:
        cl["origin"] = "clawloop"
    if extra:
        cl["metadata_json"] = json.dumps(extra, ensure_ascii=False, sort_keys=True)
    if task.provenance != DEFAULT_PROVENANCE:
        cl["provenance"] = task.provenance.model_dump(exclude_none=True)
    default = Limits()
    for k in ("max_turns", "command_timeout_s"):
        if getattr(task.limits, k) != getattr(default, k):
            cl[k] = getattr(task.limits, k)

    files: dict[str, FileSpec] = {}
    dirs: list[str] = []
    context = _verbatim_ok(task, h, runtime) if h else None
    if context is None:
        text, context = _generated_dockerfile(task, (h or {}).get("from") or DEFAULT_IMAGE)
        context["Dockerfile"] = FileSpec.of(text)
        if task.needs_image:
            cl["needs_image"] = task.needs_image
    else:
        dirs = [f"environment/{_sub('environment', d)}" for d in (h or {}).get("environment_dirs") or ()]
    _put(files, "environment", context)

    tests = dict(task.verifier.files)
    if task.verifier.entry != "test.sh":
        if "test.sh" in tests:
            raise ClawloopError(f"task {task.id}: verifier has test.sh but its entry is {task.verifier.entry}")
        tests["test.sh"] = FileSpec.of(entry_wrapper(task.verifier.entry), 0o755)
        cl["verifier_entry"] = task.verifier.entry
    tests["test.sh"] = tests["test.sh"].model_copy(update={"mode": tests["test.sh"].mode | 0o111})
    _put(files, "tests", tests)
    if task.solution is not None:
        sol = dict(task.solution.files)
        if task.solution.steps != [SOLVE_STEP]:
            if "solve.sh" in sol:
                raise ClawloopError(f"task {task.id}: solution has solve.sh and its own steps")
            sol["solve.sh"] = FileSpec.of(solve_script(task.solution.steps), 0o755)
            cl["solution_steps"] = task.solution.steps
        _put(files, "solution", sol)
    if cl:
        meta["clawloop"] = cl
    files["instruction.md"] = FileSpec.of(task.instruction)
    files["task.toml"] = FileSpec.of(dump_toml(raw))
    return files, dirs


def _write_task(root: Path, name: str, files: dict[str, FileSpec], dirs: list[str]) -> Path:
    """Write one task's tree at `root/name`. `root` is the caller's; below it nothing that is a
    link is followed, `name` included (file_tree.write_under), so a link planted in an output
    directory (`OUT/<name>/tests` → elsewhere) is refused, never written through."""
    for d in dirs:
        make_dirs_under(root, f"{name}/{d}")
    write_tree(root, {f"{name}/{rel}": spec for rel, spec in files.items()})
    return root / name


def export_harbor_task(task: Task, out_dir: str | Path, *, runtime: Runtime | None = None) -> Path:
    """Write `task` as a Harbor task directory at `out_dir` (created; existing files replaced, a
    link at or below `out_dir` refused). Nothing is written when the task has no Harbor form or a
    path or mode of it is refused (harbor_tree, file_tree.check_tree)."""
    out = Path(os.path.abspath(out_dir))
    files, dirs = harbor_tree(task, runtime)
    check_tree(out, files, dirs)
    return _write_task(out.parent, out.name, files, dirs)


def task_name(task: Task) -> str:
    """The task's Harbor directory name when it has one, else its id."""
    h = task.metadata.get(HARBOR_KEY)
    name = h.get("name") if isinstance(h, dict) else None
    return name if isinstance(name, str) and name else task.id


def export_tasks(tasks: list[Task], out_root: str | Path) -> list[Path]:
    """Export each task to `out_root/<name>` (names made unique with the id). Every task's tree is
    built and checked first, so a task without a Harbor form or with a refused path or mode
    writes nothing at all; then no link below `out_root` is followed while writing."""
    root = Path(out_root)
    seen: set[str] = set()
    planned = []
    runtime = detect_runtime()
    for t in tasks:
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", task_name(t)).strip(".-") or t.id
        if name in seen:
            name = f"{name}-{t.id}"
        seen.add(name)
        files, dirs = harbor_tree(t, runtime)
        check_tree(root / name, files, dirs)
        planned.append((name, files, dirs))
    return [_write_task(root, name, files, dirs) for name, files, dirs in planned]
