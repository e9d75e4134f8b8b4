"""dvc.yaml cannot drift from the code: every stage lists the project code it runs and the params it reads.

For a content-addressed pipeline a missing dep is a correctness bug: an edit there reuses a stale
artifact. For each stage (foreach groups included) this computes, from the source:

- the project modules its `stages/*.py` script runs: imports followed transitively, those inside
  functions too (tests/import_graph.py), plus the data files they read beside the code (templates,
  word lists, scripts copied into sandboxes);
- the params.yaml keys it reads: `params.<section>...` in the script's `main(params)` and in every
  project function the script hands `params` to, followed through further calls;

and fails naming the stage and what dvc.yaml's `deps`/`params` miss. A directory in `deps` covers
everything below it; a params key covers the keys below it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from import_graph import ROOT, closure, data_paths, imports, is_package, modules, relpath, trivial

TOP_LEVEL_ONLY = frozenset({"clawloop.config.params"})
"""Modules whose function-local imports are not followed: params.py's functions only *validate*
params.yaml (each phase's config class checks its section, so a typo anywhere stops every stage
before work); what they import can stop a stage, never change what it writes."""

GENERATORS = {
    "clawloop/phases/synthesize": "a base model is a fixed starting point: a scratch base pretrains on "
    "level-1/2 procedural tasks and the generators' word lists, but editing a generator reruns only the "
    "synthesis stages (see dvc.yaml)"}
EXEMPT: dict[str, dict[str, str]] = {"bootstrap": GENERATORS}
"""Paths a stage runs but leaves out of its deps on purpose, with the reason."""

EXECUTOR = {"executor": "where sandbox episodes run (local threads or Ray tasks), not what they compute: "
                        "the same verdicts either way (tests/test_ray_executor.py), so a loop moved onto a "
                        "cluster reuses the run cache"}
PARAMS_EXEMPT: dict[str, dict[str, str]] = {
    "evaluate-base": {"gate": "iteration 0 has no --previous: nothing to gate, the tolerance is never compared"},
    "validate@${key}": EXECUTOR, "train@${key}": EXECUTOR, "transfer": EXECUTOR,
}
"""params keys a stage reads but leaves out on purpose, with the reason."""

NOT_DATA = {"benchmarks": "agent_free.default_heldout is `clawloop validate`'s default; the stages pass "
                          "validation.heldout, fingerprinted by the suites stage into runs/suites.json"}
"""Data paths the code can read that no stage reads through it."""


def _dvc() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]


def stages() -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, stage body) of every stage; a foreach group once, by its template (`train@${key}`)."""
    for name, body in _dvc().items():
        yield (f"{name}@${{key}}", body["do"]) if "foreach" in body else (name, body)


def script_of(body: dict[str, Any]) -> str:
    m = re.search(r"python -m (stages\.\w+)", body["cmd"])
    assert m, f"cmd does not run a stage script: {body['cmd']!r}"
    return m.group(1)


def _covered(path: str, listed: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in listed)


# ------------------------------------------------------------------------------ code
def required_code(script: str) -> dict[str, str]:
    """Path → why (the chain of imports) of every file the script's stage runs or reads."""
    out: dict[str, str] = {}
    for module, chain in sorted(closure(script, TOP_LEVEL_ONLY).items()):
        why = " → ".join(relpath(m) for m in chain)
        if not (is_package(module) and trivial(module)):
            out.setdefault(relpath(module), why)
        for data in data_paths(module):
            if data not in NOT_DATA:
                out.setdefault(data, f"{why} reads it")
    return out


def missing_deps(name: str, body: dict[str, Any]) -> list[str]:
    deps = [d for d in body.get("deps", []) if "${" not in d]
    exempt = EXEMPT.get(name.split("@")[0], {})
    return [f"{path}  ({why})" for path, why in required_code(script_of(body)).items()
            if not _covered(path, deps) and not _covered(path, list(exempt))]


# ---------------------------------------------------------------------------- params
def _fields(cls: Any) -> dict[str, Any]:
    return getattr(cls, "model_fields", {})


def params_key(attrs: list[str]) -> str:
    """The params.yaml key an attribute chain on Params reads (`rollout.batch`; `train` for
    `train.options`): as deep as the chain follows fields of the params models."""
    from pydantic import BaseModel

    from clawloop.config.params import Params

    cls: Any = Params
    keys: list[str] = []
    for a in attrs:
        field = _fields(cls).get(a)
        if field is None:
            break
        keys.append(a)
        cls = field.annotation
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            break
    return ".".join(keys)


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(modules()[module].read_text())


@cache
def _bindings(module: str) -> dict[str, tuple[str, str | None]]:
    """Names a module binds by import (anywhere in it) → (module, function or None for a module)."""
    out: dict[str, tuple[str, str | None]] = {}
    package = module if is_package(module) else module.rpartition(".")[0]
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in modules():
                    out[a.asname or a.name] = (full, None)
                elif base in modules():
                    out[a.asname or a.name] = (base, a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules():
                    out[a.asname or a.name.split(".")[0]] = (a.name, None)
    return out


def _function(module: str, name: str) -> ast.FunctionDef | None:
    for node in _tree(module).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _callee(module: str, func: ast.expr) -> tuple[str, str] | None:
    """(module, function) a call in `module` goes to, when it is a project function."""
    binds = _bindings(module)
    if isinstance(func, ast.Name):
        if func.id in binds and binds[func.id][1] is not None:
            return binds[func.id][0], binds[func.id][1]  # type: ignore[return-value]
        return (module, func.id) if _function(module, func.id) else None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in binds:
        target, fn = binds[func.value.id]
        return (target, func.attr) if fn is None else None
    return None


def _parameter(fn: ast.FunctionDef, position: int | None, keyword: str | None) -> str | None:
    names = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    if keyword is not None:
        return keyword if keyword in names + [a.arg for a in fn.args.kwonlyargs] else None
    return names[position] if position is not None and position < len(names) else None


def params_read(module: str, function: str, name: str, seen: set[tuple[str, str, str]] | None = None,
                ) -> dict[str, str]:
    """params.yaml key → where, for every key `function` of `module` reads from its argument `name`
    (the stage's Params), directly or through the project functions it hands it to."""
    seen = seen if seen is not None else set()
    fn = _function(module, function)
    if fn is None or (module, function, name) in seen:
        return {}
    seen.add((module, function, name))
    parent = {id(c): n for n in ast.walk(fn) for c in ast.iter_child_nodes(n)}
    out: dict[str, str] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id == name:
            attrs, up = [], parent.get(id(node))
            while isinstance(up, ast.Attribute):
                attrs.append(up.attr)
                up = parent.get(id(up))
            if attrs and (key := params_key(attrs)):
                out.setdefault(key, f"{relpath(module)}:{node.lineno} {function}()")
        if isinstance(node, ast.Call) and (target := _callee(module, node.func)) is not None:
            callee = _function(*target)
            handed = [(i, None) for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == name]
            handed += [(None, k.arg) for k in node.keywords if isinstance(k.value, ast.Name) and k.value.id == name]
            for position, keyword in handed:
                arg = _parameter(callee, position, keyword) if callee else None
                if arg is not None:
                    for key, where in params_read(*target, arg, seen).items():
                        out.setdefault(key, where)
    return out


def missing_params(name: str, body: dict[str, Any]) -> list[str]:
    listed = [p for p in body.get("params", []) if isinstance(p, str)] + list(PARAMS_EXEMPT.get(name, {}))
    read = params_read(script_of(body), "main", "params")
    return [f"{key}  (read at {where})" for key, where in sorted(read.items())
            if not any(key == p or key.startswith(p + ".") for p in listed)]


# ----------------------------------------------------------------------------- tests
STAGES = dict(stages())


@pytest.mark.parametrize("name", list(STAGES))
def test_deps_list_the_code_the_stage_runs(name: str) -> None:
    missing = missing_deps(name, STAGES[name])
    assert not missing, f"dvc.yaml stage {name}: deps miss\n  " + "\n  ".join(missing)


@pytest.mark.parametrize("name", list(STAGES))
def test_params_list_the_keys_the_stage_reads(name: str) -> None:
    missing = missing_params(name, STAGES[name])
    assert not missing, f"dvc.yaml stage {name}: params miss\n  " + "\n  ".join(missing)


def test_listed_code_deps_exist() -> None:
    stale = [f"{name}: {d}" for name, body in STAGES.items() for d in body.get("deps", [])
             if "${" not in d and d.split("/")[0] in ("clawloop", "sandbox", "stages") and not (ROOT / d).exists()]
    assert not stale, "dvc.yaml deps that do not exist:\n  " + "\n  ".join(stale)


def test_a_missing_dep_or_param_is_named() -> None:
    """The checks find what a stage leaves out: an import two calls away, a data dir, a params key
    read through a library function."""
    body = dict(STAGES["evaluate@${key}"])
    body["deps"] = [d for d in body["deps"] if d not in ("clawloop/phases/evaluate", "clawloop/core")]
    body["params"] = [p for p in body["params"] if p not in ("rollout", "eval")]
    missing = "\n".join(missing_deps("evaluate@${key}", body))
    assert "clawloop/phases/evaluate/gate.py  (stages/evaluate.py → " in missing
    assert "clawloop/core/agent/templates  (" in missing
    missed = missing_params("evaluate@${key}", body)
    assert any(m.startswith("eval.") and "(read at clawloop/phases/evaluate/evaluate.py:" in m for m in missed), missed
    assert any(m.startswith("rollout  (read at clawloop/core/rollout_settings.py:") for m in missed)


CODE_DEPS_PER_STAGE = 8


def test_a_stage_lists_its_phase_not_its_modules() -> None:
    """Deps name packages (a stage's phase and the shared layers), not modules one by one: at most
    CODE_DEPS_PER_STAGE code lines a stage, so a new module in a phase needs no edit of dvc.yaml."""
    over = {name: code for name, body in STAGES.items()
            if len(code := [d for d in body.get("deps", []) if d.split("/")[0] in ("clawloop", "sandbox", "stages")])
            > CODE_DEPS_PER_STAGE}
    assert not over, over


def test_every_stage_script_is_a_stage() -> None:
    scripts = {script_of(b) for b in STAGES.values()}
    on_disk = {f"stages.{p.stem}" for p in (ROOT / "stages").glob("*.py") if p.stem != "__init__"}
    assert on_disk == scripts


def test_imports_inside_functions_are_followed() -> None:
    # sft.py imports training.progress (and with it transformers) only when it trains
    assert any(i.local and i.target == "clawloop.phases.train.progress" for i in imports("clawloop.phases.train.sft"))
    assert "clawloop.phases.train.progress" in closure("stages.train")
    assert Path(relpath("clawloop.phases.train.progress")) == Path("clawloop/phases/train/progress.py")
