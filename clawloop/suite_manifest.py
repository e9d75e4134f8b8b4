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

from pathlib import Path
from typing import Any

import orjson

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
    from clawloop.tasks.formats import load_suite_any
    from clawloop.tasks.suite import load_suite

    suites: dict[str, Any] = {}
    for s in params.eval.suites:
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


def eval_suites(params: Any, manifest: str | Path | None) -> list[tuple[str, list[Any], bool]]:
    """(name, tasks to roll out, held-out?) for each of `eval.suites`, checked against `manifest`."""
    from clawloop.tasks.formats import load_suite_any

    out = []
    for s in params.eval.suites:
        suite = load_suite_any(s.path, s.format, name=s.name)
        check(manifest, s.path, suite.items)
        out.append((s.name, s.subset(suite.tasks), s.heldout))
    return out


def heldout_tasks(params: Any, manifest: str | Path | None) -> list[Any]:
    """Every task of `validation.heldout` (for the overlap check), checked against `manifest`."""
    from clawloop.tasks.suite import load_suite

    tasks = []
    for path in params.validation.heldout:
        suite = load_suite(path)
        check(manifest, path, suite.items)
        tasks += suite.tasks
    return tasks
