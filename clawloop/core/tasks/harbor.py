"""Harbor task directories ⇄ Task records, losslessly for everything the Task models.

Harbor layout: `task.toml`, `instruction.md`, `environment/Dockerfile` (+ the files it
COPYs), `tests/test.sh` (+ helpers), optional `solution/solve.sh` (+ helpers). Terminal-Bench 1
directories (`task.yaml`, `Dockerfile`, `run-tests.sh`, `solution.sh`) import too.

Mapping: `[metadata] skill` (else `category`) → skill; `level` (else `difficulty`
easy/medium/hard → 1/3/5) → level; `tags` → tags; `[verifier]`/`[agent] timeout_sec` → limits;
top-level `source` → source; the Dockerfile through Dockerfile-lite → files, workdir, env,
setup, needs_image. Everything else of task.toml, the original Dockerfile and the environment
files it does not COPY are kept in `metadata["harbor"]`, so an unmodified import exports back
verbatim; fields Harbor has no place for go to `[metadata.clawloop]` of task.toml.

This module imports; clawloop.core.tasks.harbor_export writes task directories back. The generated
scripts (`entry_wrapper`, `solve_script`) live here because import recognizes them to undo them.
"""

from __future__ import annotations

import copy
import json
import posixpath
import shlex
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clawloop.core.tasks.dockerfile_lite import TASK_FAULT, parse_dockerfile
from clawloop.core.tasks.documents import prune, read_toml, read_yaml
from clawloop.core.tasks.file_tree import (
    JUNK,
    ReadBudget,
    empty_dirs,
    find_dirs,
    read_file,
    read_tree,
)
from clawloop.core.tasks.layers import SANDBOX_KEY
from clawloop.core.tasks.shell_lite import LayerWants, Runtime, check_script, detect_runtime
from clawloop.core.tasks.task import MAX_NESTING, FileSpec, Limits, Provenance, Solution, Task, Verifier
from clawloop.core.tasks.uid_check import user_switch
from clawloop.errors import ClawloopError, describe_validation_error, validated

HARBOR_KEY = "harbor"
SOLVE_STEP = "bash /solution/solve.sh"
DEFAULT_IMAGE = "ubuntu:24.04"
GENERATED_MARK = "# clawloop: generated from the task's files, env, workdir and setup"
_DIFFICULTY = {"trivial": 1, "easy": 1, "medium": 3, "hard": 5, "expert": 5}
DEFAULT_PROVENANCE = Provenance(routine="harbor")
FORMAT_KEYS = ("answer", "claw_eval_live", "clawgym", "intercode")
"""Metadata records that pick a task's verifier adapter (clawloop.core.tasks.adapters): only their
own loaders set them, never the `metadata_json` of a Harbor directory (a Claw-Eval-Live record
there would have the host run the directory's tests/grader.py)."""


# ---------------------------------------------------------------------------------- import
def is_task_dir(path: Path) -> bool:
    """A Harbor task (task.toml) or a Terminal-Bench 1 task (task.yaml with run-tests.sh)."""
    return (path / "task.toml").is_file() or ((path / "task.yaml").is_file() and (path / "run-tests.sh").is_file())


def find_task_dirs(root: str | Path) -> list[Path]:
    """Task directories at `root` itself or up to four levels below it, sorted."""
    return find_dirs(root, is_task_dir, depth=4, skip=lambda d: d.startswith(".") or d in JUNK)


def _get(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    v = table.get(key)
    if v is None:
        return None
    if isinstance(v, bool) and kind is not bool or not isinstance(v, kind):
        raise ClawloopError(f"{where}.{key}: expected {getattr(kind, '__name__', 'number')}, got {v!r}")
    return v


def _table(d: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    v = d.get(key, {})
    if not isinstance(v, dict):
        raise ClawloopError(f"{where}: {key}: expected a table")
    return v


def load_harbor_task(path: str | Path, *, source: str | None = None, runtime: Runtime | None = None) -> Task:
    """Read one Harbor (or Terminal-Bench 1) task directory; bad input names file and field.

    tests/test.sh and solution/solve.sh become executable whatever their mode on disk: Harbor
    itself runs `chmod +x` on them, and public tasks often store them as 0644.
    """
    path = Path(path)
    if not path.is_dir():
        raise ClawloopError(f"{path}: not a directory")
    runtime = runtime or detect_runtime()
    budget = ReadBudget()  # every file of the task, task.toml included, counts against one cap
    if not (path / "task.toml").is_file() and is_task_dir(path):
        return _load_tb1_task(path, source=source, runtime=runtime, budget=budget)
    where = f"{path}/task.toml"
    raw = read_toml(path / "task.toml", where, budget)
    meta = _table(raw, "metadata", where)
    cl = _table(meta, "clawloop", f"{where}: metadata")
    skill = _get(meta, "skill", str, f"{where}: metadata") or _get(meta, "category", str, f"{where}: metadata")
    level = _get(meta, "level", int, f"{where}: metadata")
    if level is None:
        diff = _get(meta, "difficulty", str, f"{where}: metadata")
        level = _DIFFICULTY.get(diff.lower(), 3) if diff else 1
    tags = _get(meta, "tags", list, f"{where}: metadata") or []
    vt = _get(_table(raw, "verifier", where), "timeout_sec", (int, float), f"{where}: verifier")
    at = _get(_table(raw, "agent", where), "timeout_sec", (int, float), f"{where}: agent")
    env_t = _table(raw, "environment", where)

    instruction = _read_text(path / "instruction.md", budget)
    tests, entry = _verifier_files(path, cl, f"{where}: metadata.clawloop", budget)
    solution = _solution(path / "solution", cl, budget, f"{where}: metadata.clawloop")

    env_dir = path / "environment"
    context = read_tree(env_dir, skip_junk=False, budget=budget, within=path)
    harbor: dict[str, Any] = {"name": path.name, "format": "harbor"}
    wants = LayerWants()
    fields, lite_needs = _environment(context, harbor, str(env_dir), runtime,
                                      dirs=empty_dirs(env_dir) if env_dir.is_dir() else frozenset(), layer=wants)
    if "Dockerfile" not in context and env_t.get("docker_image"):
        harbor["from"] = env_t["docker_image"]
        lite_needs = f"prebuilt image {env_t['docker_image']} and no Dockerfile"
    script = tests.get(entry) or tests.get("test.sh") or FileSpec(content="")
    test_needs = check_script(script.data().decode(errors="replace"), runtime, wants)
    needs = lite_needs or (f"tests/{entry}: {test_needs}" if test_needs else None) or cl.get("needs_image")
    sandbox_rec = _sandbox_record(wants, (user_switch(tests) or wants.uids) if not needs else None)
    metadata = _metadata(raw, cl, harbor, sandbox_rec, where)
    limits = _limits({**{k: cl[k] for k in ("max_turns", "command_timeout_s") if k in cl},
                      "verifier_timeout_s": vt, "agent_timeout_s": at}, _TOML_LIMITS, where)
    provenance = validated(Provenance, cl["provenance"], where, "metadata.clawloop.provenance") \
        if "provenance" in cl else DEFAULT_PROVENANCE
    try:
        return Task(
            instruction=instruction, **fields, verifier=Verifier(files=tests, entry=entry),
            solution=solution, skill=skill or "general", level=level, tags=tuple(str(t) for t in tags),
            source=str(raw.get("source") or source or path.resolve().parent.name), needs_image=needs,
            limits=limits, metadata=metadata, provenance=provenance,
        )
    except ValidationError as e:
        raise ClawloopError(f"{path}: {describe_validation_error(e)}") from None


def _verifier_files(path: Path, cl: dict[str, Any], where: str,
                    budget: ReadBudget) -> tuple[dict[str, FileSpec], str]:
    """(files, entry) of the task's tests/: a generated wrapper of a `verifier_entry` undone."""
    tests = read_tree(path / "tests", budget=budget, within=path)
    if "test.sh" not in tests:
        raise ClawloopError(f"{path}/tests/test.sh: file not found (Harbor runs it to verify: the task's fault)")
    if not any(b"reward" in spec.data() for spec in tests.values()):
        # Harbor reads /logs/verifier/reward.txt or reward.json; no file of the verifier names
        # one, so it would end without a reward under Harbor + Docker too.
        raise ClawloopError(f"{path}/tests: no verifier file writes a reward (/logs/verifier/reward.txt or "
                            "reward.json, which Harbor reads: the task's fault)")
    tests["test.sh"] = _executable(tests["test.sh"])
    entry = _get(cl, "verifier_entry", str, where) or "test.sh"
    if entry != "test.sh" and tests["test.sh"].content == entry_wrapper(entry):
        del tests["test.sh"]
    return tests, entry


def _solution(path: Path, cl: dict[str, Any], budget: ReadBudget, where: str) -> Solution | None:
    """The task's solution/ (None without one): a generated solve.sh of `solution_steps` undone."""
    files = read_tree(path, budget=budget, within=path.parent)
    if not files:
        return None
    steps = _get(cl, "solution_steps", list, where) or [SOLVE_STEP]
    if not all(isinstance(s, str) for s in steps):
        raise ClawloopError(f"{where}.solution_steps: expected a list of strings (shell commands)")
    if steps != [SOLVE_STEP] and files.get("solve.sh", FileSpec(content="")).content == solve_script(steps):
        del files["solve.sh"]
    if "solve.sh" in files:
        files["solve.sh"] = _executable(files["solve.sh"])
    return Solution(steps=steps, files=files)


def _metadata(raw: dict[str, Any], cl: dict[str, Any], harbor: dict[str, Any], sandbox_rec: dict[str, Any],
              where: str) -> dict[str, Any]:
    """Task.metadata: the harbor record (with what of task.toml the Task does not model), the
    fields of `metadata_json`, the sandbox record."""
    residual = copy.deepcopy(raw)
    for k in ("skill", "level", "tags", "clawloop"):
        residual.get("metadata", {}).pop(k, None)
    residual.get("verifier", {}).pop("timeout_sec", None)
    residual.get("agent", {}).pop("timeout_sec", None)
    residual.pop("source", None)
    residual = prune(residual)
    if residual:
        harbor["task_toml"] = residual
    try:
        extra = json.loads(cl["metadata_json"]) if isinstance(cl.get("metadata_json"), str) else {}
    except ValueError as e:
        raise ClawloopError(f"{where}: metadata.clawloop.metadata_json: not valid JSON ({e})") from None
    except RecursionError:
        raise ClawloopError(f"{where}: metadata.clawloop.metadata_json: nested deeper than {MAX_NESTING} "
                            "levels") from None
    if not isinstance(extra, dict):
        raise ClawloopError(f"{where}: metadata.clawloop.metadata_json: expected a JSON object")
    if smuggled := [k for k in FORMAT_KEYS if k in extra]:
        raise ClawloopError(f"{where}: metadata.clawloop.metadata_json: {smuggled[0]}: a format record is set "
                            "only by its own loader, never by a Harbor directory (import the task in its format)")
    metadata = extra if cl.get("origin") == "clawloop" else {**extra, HARBOR_KEY: _prune_empty(harbor)}
    # Recomputed from the Dockerfile and tests on every import (an export carries the old one in
    # metadata_json): after the harbor record, so an export-import round trip is byte-identical.
    metadata = {k: v for k, v in metadata.items() if k != SANDBOX_KEY}
    if sandbox_rec:
        metadata[SANDBOX_KEY] = sandbox_rec
    return metadata


_TOML_LIMITS = {"verifier_timeout_s": "verifier.timeout_sec", "agent_timeout_s": "agent.timeout_sec",
                "max_turns": "metadata.clawloop.max_turns", "command_timeout_s": "metadata.clawloop.command_timeout_s"}
"""Task.limits field → where task.toml sets it (what an error names)."""


def _limits(values: dict[str, Any], names: dict[str, str], where: str) -> Limits:
    """Limits from the file's `values` (None: the default); a bad one (inf, 1e308: Limits caps
    every time) is a ClawloopError naming `where` and the field as the file spells it (`names`)."""
    try:
        return Limits(**{k: v for k, v in values.items() if v is not None})
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "limits"
        raise ClawloopError(f"{where}: {names.get(field, field)}: {err['msg']}") from None


def _sandbox_record(wants: LayerWants, switch: str | None) -> dict[str, Any]:
    """What the sandbox must add for the task (clawloop.core.tasks.layers): layers of the registry
    packages the runtime lacks, and several uids where the verifier switches users."""
    rec: dict[str, Any] = {}
    if wants.to_json():
        rec["layers"] = wants.to_json()
    if switch:
        rec["uids"] = switch
    return rec


def _environment(context: dict[str, FileSpec], harbor: dict[str, Any], where: str, runtime: Runtime,
                 exclude: frozenset[str] = frozenset(), dirs: frozenset[str] = frozenset(),
                 layer: LayerWants | None = None) -> tuple[dict[str, Any], str | None]:
    """Task fields from the Dockerfile in `context`; records the original in `harbor`.

    Harbor reads environment/docker-compose.yaml only (never .yml) and merges it over its own
    compose file: it may add services or build `main` from another context (`context: ..`, the
    task dir). Such a task needs its image, and a COPY that environment/ alone lacks is then
    not the task's fault: the original Dockerfile and files are kept, nothing is replayed."""
    is_harbor = harbor.get("format") == "harbor"
    names = ("docker-compose.yaml",) if is_harbor else ("docker-compose.yaml", "docker-compose.yml")
    compose = {k: context[k] for k in names if k in context}
    needs = (_compose_needs(compose) or (_compose_build(compose["docker-compose.yaml"]) if is_harbor else None)) \
        if compose else None
    if "Dockerfile" not in context:
        return {}, needs
    text = context["Dockerfile"].data().decode("utf-8", errors="replace")
    name = "environment/Dockerfile" if is_harbor else "Dockerfile"
    try:
        lr = parse_dockerfile(text, context, runtime, where=f"{where}/Dockerfile", context_dirs=dirs, name=name,
                              layers=layer is not None)
    except ClawloopError as e:
        if not needs or not str(e).endswith(TASK_FAULT):  # caps and other refusals stand
            raise
        if not text.startswith(GENERATED_MARK):
            harbor.update(dockerfile=text, environment_files={
                k: v.model_dump(mode="json") for k, v in context.items()
                if k != "Dockerfile" and k.split("/")[0] not in exclude},
                environment_dirs=sorted(d for d in dirs if d.split("/")[0] not in exclude))
        return {}, needs
    if layer is not None and lr.layer is not None and not lr.needs_image:
        layer.merge(lr.layer)
    harbor["from"] = lr.base_image
    if not text.startswith(GENERATED_MARK):
        used = set(lr.copy_sources.values()) | {"Dockerfile"} | exclude
        harbor.update(dockerfile=text, copy_sources=lr.copy_sources, skipped=lr.skipped, ignored=lr.ignored,
                      environment_files={k: v.model_dump(mode="json") for k, v in context.items()
                                         if k not in used and k.split("/")[0] not in exclude},
                      environment_dirs=sorted(d for d in dirs if d.split("/")[0] not in exclude))
    return {"files": lr.files, "setup": lr.setup, "workdir": lr.workdir, "env": lr.env}, lr.needs_image or needs


def _executable(spec: FileSpec) -> FileSpec:
    return spec if spec.mode & 0o111 else spec.model_copy(update={"mode": spec.mode | 0o111})


def _read_text(p: Path, budget: ReadBudget) -> str:
    try:
        text = read_file(p, budget).decode("utf-8")
    except UnicodeDecodeError:
        raise ClawloopError(f"{p}: not UTF-8 text") from None
    if not text.strip():
        raise ClawloopError(f"{p}: empty")
    return text


def _prune_empty(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v not in (None, [], {}, "")}


def _compose_needs(context: dict[str, FileSpec]) -> str | None:
    spec = context.get("docker-compose.yaml") or context.get("docker-compose.yml")
    try:
        doc = read_yaml(spec.data(), "environment/docker-compose.yaml")  # type: ignore[union-attr]
        services = doc.get("services") if isinstance(doc, dict) else None
    except ClawloopError:
        return "environment/docker-compose.yaml cannot be read"
    names = [str(k) for k in services] if isinstance(services, dict | list) else []
    return f"multi-container environment ({', '.join(names)})" if len(names) > 1 else None


def _compose_build(spec: FileSpec) -> str | None:
    """Why the task needs its image when its docker-compose.yaml builds Harbor's `main` service
    from a context other than environment/ or from another Dockerfile (relative paths resolve
    against environment/, where the file is); None otherwise."""
    import yaml

    try:
        doc = yaml.safe_load(spec.data())
    except (yaml.YAMLError, RecursionError, UnicodeDecodeError):
        return "environment/docker-compose.yaml cannot be read"
    services = doc.get("services") if isinstance(doc, dict) else None
    main = services.get("main") if isinstance(services, dict) else None
    build = main.get("build") if isinstance(main, dict) else None
    if build is None:
        return None
    ctx, dockerfile = (build, None) if isinstance(build, str) else \
        (build.get("context", "."), build.get("dockerfile")) if isinstance(build, dict) else (None, None)
    if not isinstance(ctx, str) or posixpath.normpath(ctx) != ".":
        return f"environment/docker-compose.yaml builds main from the context {str(ctx)[:80]!r}, not environment/"
    if dockerfile is not None and (not isinstance(dockerfile, str) or posixpath.normpath(dockerfile) != "Dockerfile"):
        return f"environment/docker-compose.yaml builds main from {str(dockerfile)[:80]!r}, not environment/Dockerfile"
    return None


def entry_wrapper(entry: str) -> str:
    """test.sh of a task whose verifier entry is another script (Harbor runs tests/test.sh)."""
    return f"#!/bin/bash\n# clawloop: the verifier's entry is {entry}\nexec bash /tests/{shlex.quote(entry)}\n"


def solve_script(steps: list[str]) -> str:
    """solution/solve.sh running a task's reference steps, each in a subshell from the same cwd."""
    body = "".join(f"(\n{s}\n)\ncd \"$WD\"\n" for s in steps)
    return f"#!/bin/bash\n# clawloop: the reference solution, one subshell per step\nWD=\"$PWD\"\n{body}"


# ------------------------------------------------------------------------- Terminal-Bench 1
_TB1_FILES = frozenset({"task.yaml", "run-tests.sh", "solution.sh", "solution.yaml", "tests"})
_TB1_WRAPPER = """#!/bin/bash
# clawloop: Terminal-Bench 1 adapter, the reward is run-tests.sh's exit status
export TEST_DIR=/tests
bash /tests/run-tests.sh
status=$?
mkdir -p /logs/verifier
if [ "$status" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


_TB1_LIMITS = {"agent_timeout_s": "max_agent_timeout_sec", "verifier_timeout_s": "max_test_timeout_sec"}
"""Task.limits field → the task.yaml key that sets it."""


def _tb1_steps(spec: FileSpec, where: str) -> list[str]:
    """solution.yaml's commands: a list of strings, or of mappings whose `command` is one."""
    doc = read_yaml(spec.data(), where) or []
    if not isinstance(doc, list):
        raise ClawloopError(f"{where}: expected a list of commands, got {type(doc).__name__}")
    steps = [s.get("command") if isinstance(s, dict) else s for s in doc]
    for i, s in enumerate(steps):
        if not isinstance(s, str):
            raise ClawloopError(f"{where}: [{i}]: expected a command (a string, or a mapping whose `command` is one)")
    return steps


def _load_tb1_task(path: Path, *, source: str | None, runtime: Runtime, budget: ReadBudget) -> Task:
    where = f"{path}/task.yaml"
    raw = read_yaml(read_file(path / "task.yaml", budget), where) or {}
    if not isinstance(raw, dict):
        raise ClawloopError(f"{where}: expected a mapping")
    instruction = raw.get("instruction")
    if instruction is None:
        base = [d for d in raw.get("descriptions") or [] if isinstance(d, dict) and d.get("key") == "base"]
        instruction = base[0].get("description") if base else None
    if not isinstance(instruction, str) or not instruction.strip():
        raise ClawloopError(f"{where}: instruction: missing or empty")
    # The directory is its own build context: read once (so each byte counts once against the
    # cap); tests/, run-tests.sh and the solution are taken from it.
    context = read_tree(path, budget=budget, within=path)
    tests = {k.removeprefix("tests/"): v for k, v in context.items() if k.startswith("tests/")}
    if "run-tests.sh" not in context:
        raise ClawloopError(f"{path}/run-tests.sh: file not found")
    run_tests = context["run-tests.sh"].model_copy(update={"mode": 0o755})
    tests.update({"run-tests.sh": run_tests, "test.sh": FileSpec.of(_TB1_WRAPPER, 0o755)})
    solution = None
    if "solution.sh" in context:
        solution = Solution(steps=[SOLVE_STEP], files={"solve.sh": context["solution.sh"].model_copy(
            update={"mode": 0o755})})
    elif "solution.yaml" in context:
        solution = Solution(steps=_tb1_steps(context["solution.yaml"], f"{path}/solution.yaml"))
    harbor: dict[str, Any] = {"name": path.name, "format": "terminal-bench"}
    fields, needs = _environment(context, harbor, str(path), runtime, exclude=_TB1_FILES, dirs=empty_dirs(path))
    test_needs = check_script(run_tests.data().decode(errors="replace"), runtime)
    needs = needs or (f"run-tests.sh: {test_needs}" if test_needs else None)
    known = {"instruction", "descriptions", "category", "difficulty", "tags", "max_agent_timeout_sec",
             "max_test_timeout_sec"}
    if residual := {k: v for k, v in raw.items() if k not in known}:
        harbor["task_yaml"] = residual
    diff = raw.get("difficulty")
    lim = {k: raw[name] for k, name in _TB1_LIMITS.items() if isinstance(raw.get(name), int | float)}
    limits = _limits(lim, _TB1_LIMITS, where)
    try:
        return Task(
            instruction=instruction, **fields, verifier=Verifier(files=tests), solution=solution,
            skill=str(raw.get("category") or "general"),
            level=_DIFFICULTY.get(str(diff).lower(), 3) if diff else 1,
            tags=tuple(str(t) for t in raw.get("tags") or ()), source=source or path.resolve().parent.name,
            needs_image=needs, limits=limits, metadata={HARBOR_KEY: _prune_empty(harbor)},
            provenance=DEFAULT_PROVENANCE,
        )
    except ValidationError as e:
        raise ClawloopError(f"{path}: {describe_validation_error(e)}") from None
