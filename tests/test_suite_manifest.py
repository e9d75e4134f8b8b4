"""The suites manifest: stages refuse a suite that changed since the `suites` stage ran."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clawloop.artifacts import suites as suite_manifest
from clawloop.config.params import EvalParams, Params, SuiteParams, ValidationParams
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[1]
SHELL_CORE = ROOT / "benchmarks" / "shell-core"


def _params(suite: Path) -> Params:
    return Params.model_validate({
        "loop": {"iterations": {"1": {"prev": 0}}, "last": 1},
        "eval": EvalParams(suites=[SuiteParams(name="mini", path=str(suite))]).model_dump(),
        "validation": ValidationParams(heldout=[str(suite)]).model_dump()})


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    root = tmp_path / "mini"
    for name in sorted(p.name for p in SHELL_CORE.iterdir() if p.is_dir())[:3]:
        shutil.copytree(SHELL_CORE / name, root / name)
    return root


def test_manifest_lists_task_ids_and_accepts_the_same_suite(suite: Path, tmp_path: Path) -> None:
    from clawloop.core.io import write_json

    params = _params(suite)
    manifest = suite_manifest.build(params)
    entry = manifest["suites"][suite.as_posix()]
    assert len(entry["tasks"]) == 3 and entry["errors"] == []
    assert all(len(tid) >= 12 for tid in entry["tasks"].values())
    path = tmp_path / "suites.json"
    write_json(path, manifest)
    [(name, tasks, heldout)] = suite_manifest.eval_suites(params, path)
    assert (name, len(tasks), heldout) == ("mini", 3, True)
    assert len(suite_manifest.heldout_tasks(params, path)) == 3


def test_an_edited_task_is_refused_by_name(suite: Path, tmp_path: Path) -> None:
    from clawloop.core.io import write_json

    params = _params(suite)
    path = tmp_path / "suites.json"
    write_json(path, suite_manifest.build(params))
    edited = sorted(suite.iterdir())[1]
    (edited / "instruction.md").write_text((edited / "instruction.md").read_text() + "\nAlso say hi.\n")
    for load in (suite_manifest.eval_suites, suite_manifest.heldout_tasks):
        with pytest.raises(ClawloopError, match=f"changed since.*{edited.name}"):
            load(params, path)
    # without a manifest (a stage run by hand) nothing is checked
    assert len(suite_manifest.heldout_tasks(params, None)) == 3


def test_missing_malformed_or_foreign_manifest_names_the_file(suite: Path, tmp_path: Path) -> None:
    params = _params(suite)
    with pytest.raises(ClawloopError, match="no suite manifest"):
        suite_manifest.eval_suites(params, tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ClawloopError, match="bad.json: not JSON"):
        suite_manifest.eval_suites(params, bad)
    bad.write_text('{"version": 1, "suites": {}}')
    with pytest.raises(ClawloopError, match="bad.json: field 'suites': no entry for"):
        suite_manifest.eval_suites(params, bad)


def test_suites_stage_writes_the_manifest(suite: Path, tmp_path: Path) -> None:
    import yaml

    (tmp_path / "params.yaml").write_text(yaml.safe_dump(_params(suite).model_dump(mode="json")))
    out = tmp_path / "runs" / "suites.json"
    p = subprocess.run([sys.executable, "-m", "stages.suites", "--out", str(out)], cwd=tmp_path,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"{suite.as_posix()}: 3 tasks" in p.stdout
    assert suite_manifest.read(out)["suites"][suite.as_posix()]["errors"] == []
