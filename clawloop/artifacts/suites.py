"""Fingerprints of the suites a run reads: the `suites` stage's runs/suites.json.

For every suite path in `eval.suites` and `validation.heldout`, the manifest lists its tasks'
names and content-hash ids (and the names of tasks that fail to load). The stages that read a
suite (evaluate, validate, transfer) depend on this one file instead of each walking the suite
directory: benchmarks/shell-core has ~735 files, and DVC re-hashed them for every one of eight
stages on each `dvc repro`, most of a no-op run's time. Those stages still load the suite
themselves, and `check` refuses a suite that no longer matches the manifest, so a stage run
alone (`dvc repro -s evaluate@2` after editing a task) cannot silently use a changed suite.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import orjson

from clawloop.core.tasks.formats import load_suite_any
from clawloop.core.tasks.intercode_published import published_on
from clawloop.core.tasks.suite import load_suite
from clawloop.errors import ClawloopError

VERSION = 1


def _key(path: str | Path) -> str:
    return Path(path).as_posix().rstrip("/")


def fingerprint(items: list[Any]) -> dict[str, Any]:
    """One suite's entry: task name → id of the loaded tasks, and the names that failed to load."""
    tasks = {it.name: it.task.id for it in items if it.task is not None}
    errors = sorted(it.name for it in items if it.task is None)
    return {"tasks": dict(sorted(tasks.items())), "errors": errors}


def build(params: Any) -> dict[str, Any]:
    """The manifest of every suite `params` names (eval suites in their format, held-out paths)."""
    suites: dict[str, Any] = {}
    for s in params.eval.suites:
        if not s.present():
            print(f"[suites] {s.name}: {s.path} does not exist: skipped (optional suite){_how(s)}")
            continue
        suites[_key(s.path)] = fingerprint(load_suite_any(s.path, s.format, name=s.name).items)
    for path in params.validation.heldout:
        if _key(path) not in suites:
            suites[_key(path)] = fingerprint(load_suite(path).items)
    return {"version": VERSION, "suites": suites}


def read(path: str | Path) -> dict[str, Any]:
    """A manifest file; ClawloopError naming the file when it is missing or malformed."""
    try:
        data = orjson.loads(Path(path).read_bytes())
    except FileNotFoundError:
        raise ClawloopError(f"{path}: no suite manifest (run `dvc repro suites`)") from None
    except orjson.JSONDecodeError as e:
        raise ClawloopError(f"{path}: not JSON ({e})") from None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("suites"), dict):
        raise ClawloopError(f"{path}: field 'version'/'suites': not a version-{VERSION} suite manifest")
    return data


def check(manifest: str | Path | None, suite_path: str | Path, items: list[Any]) -> None:
    """Refuse a loaded suite whose tasks differ from the manifest's (no manifest: no check)."""
    if manifest is None:
        return
    entry = read(manifest)["suites"].get(_key(suite_path))
    if entry is None:
        raise ClawloopError(f"{manifest}: field 'suites': no entry for {suite_path} "
                            f"(params changed since the manifest was written: run `dvc repro`)")
    now = fingerprint(items)
    if now != entry:
        changed = sorted(set(now["tasks"].items()) ^ set(entry["tasks"].items()))
        names = sorted({name for name, _ in changed} | set(now["errors"]) ^ set(entry["errors"]))
        raise ClawloopError(f"{suite_path} changed since {manifest} was written "
                            f"({len(names)} tasks differ, e.g. {', '.join(names[:3])}): run `dvc repro` "
                            f"(a suite missing from the suites stage's deps in dvc.yaml needs "
                            f"`dvc repro -f -s suites` first)")


def eval_suites(params: Any, manifest: str | Path | None, only: Collection[str] | None = None, *,
                skip_ends: str | None = None) -> list[tuple[str, list[Any], bool]]:
    """(name, tasks to roll out, held-out?) for each of `eval.suites` (those named in `only`, if
    given), checked against `manifest`. `skip_ends`: where the `at: ends` suites are not due, in
    words for the note ("at iteration 2"); None: they are rolled out too."""
    out = []
    for s in params.eval.suites:
        if only is not None and s.name not in only:
            continue
        if skip_ends is not None and s.at == "ends":
            print(f"[evaluate] {s.name}: skipped {skip_ends} (at: ends: rolled out at iteration 0 and on "
                  f"the final policy, stage evaluate-final, only)")
            continue
        if not s.present():
            print(f"[evaluate] {s.name}: {s.path} does not exist: skipped (optional suite){_how(s)}")
            continue
        suite = load_suite_any(s.path, s.format, name=s.name)
        check(manifest, s.path, suite.items)
        out.append((s.name, s.subset(suite.tasks), s.heldout))
    return out


def heldout_tasks(params: Any, manifest: str | Path | None, overlap: str = "ngram") -> list[Any]:
    """Every task synthesis must stay off by the `overlap` check (`ngram`: `validation.heldout`'s
    suites and every held-out suite of `eval.suites` whose `overlap` is ngram, in its own format,
    InterCode-Bash's queries and gold commands too; `same_task`: the held-out suites whose overlap
    is same_task), each checked against `manifest`."""
    tasks, seen = [], set()
    for path in params.validation.heldout if overlap == "ngram" else ():
        suite = load_suite(path)
        check(manifest, path, suite.items)
        tasks += suite.tasks
        seen.add(_key(path))
    for s in params.eval.suites:
        if s.heldout and s.overlap == overlap and s.present() and _key(s.path) not in seen:
            suite = load_suite_any(s.path, s.format, name=s.name)
            check(manifest, s.path, suite.items)
            tasks += suite.tasks
            seen.add(_key(s.path))
    return tasks


FETCH = {"intercode": "benchmarks/intercode/fetch.py", "clawgym": "benchmarks/clawgym/fetch.py"}
"""The script that exports a suite of a public benchmark's format (SkillsBench is Harbor: found by its path;
Claw-Eval-Live's export is the grader root above its tasks, see benchmarks/README.md)."""


def _how(s: Any) -> str:
    """How to export a missing suite: its format's fetch.py, or the one beside its path."""
    beside = Path(s.path).parent / "fetch.py"
    fetch = FETCH.get(s.format) or (beside.as_posix() if beside.is_file() else None)
    return f" — export it with `.venv/bin/python {fetch} {s.path}`" if fetch else ""


def published_baselines(params: Any, suite: str, names: list[str]) -> dict[str, dict[str, int]]:
    """Published results of suite `suite` (by name in eval.suites) on the tasks `names`: for an
    InterCode-Bash export, each published run's successes on exactly these tasks."""
    for s in params.eval.suites:
        if s.name == suite and s.format == "intercode" and s.present():
            return published_on(s.path, sorted(set(names)))
    return {}
