"""`clawloop check PATH`: a runs/ tree, an iteration directory, or any single artifact, the
check picked by content; exit 0 when valid, 1 on a violation, 2 when PATH is no artifact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clawloop.artifacts.check import check_path
from clawloop.artifacts.diagnosis import CapabilityReport
from clawloop.artifacts.metrics import IterationMetrics, write_metrics
from clawloop.artifacts.probe import ProbeResult, write_probe
from clawloop.cli import app
from clawloop.core.agent.rollout import TrajectoryWriter
from clawloop.core.io import write_json, write_jsonl
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.pool import write_pool
from clawloop.errors import ClawloopError
from clawloop.phases.evaluate.agent_eval import SuiteItem, error_record

FIXTURES = Path(__file__).parent / "fixtures" / "harbor"


def kinds(path: Path) -> dict[str, tuple[str, str | None]]:
    return {f.path.name: (f.kind, f.error) for f in check_path(path)}


@pytest.fixture()
def artifacts(tmp_path: Path) -> Path:
    """One of each artifact, under names that do not give them away."""
    d = tmp_path / "loose"
    task = load_harbor_task(FIXTURES / "word-count")
    write_pool(d / "a.jsonl", [task])
    write_probe(d / "b.jsonl", [ProbeResult(task_id=task.id, k=2, passes=1, errors=0, label="learnable")])
    write_jsonl(d / "c.jsonl", [error_record(SuiteItem("s", "t", None, "broken"), "oracle").to_json()])
    write_json(d / "diag" / "diagnosis.json", CapabilityReport().model_dump(mode="json"))
    write_metrics(d / "m.json", IterationMetrics(iteration=1, heldout_pass_rate=0.5, promoted=True,
                                                 best_heldout_pass_rate=0.5, policy_from=1, wall_s=2.0))
    write_json(d / "r.json", {"input": 3, "kept": 1, "rejected": {"parse": 2}})
    rows = error_record(SuiteItem("s", "t", None, "x"), "noop")
    writer = TrajectoryWriter(d / "traj")
    writer.add(rows.to_row(), [])
    writer.flush()
    return d


def test_single_artifacts_are_checked_by_content(artifacts: Path) -> None:
    d = artifacts
    assert kinds(d / "a.jsonl") == {"a.jsonl": ("task pool", None)}
    assert kinds(d / "b.jsonl") == {"b.jsonl": ("probe table", None)}
    assert kinds(d / "c.jsonl") == {"c.jsonl": ("eval records", None)}
    assert kinds(d / "diag") == {"diagnosis.json": ("capability report", None)}
    assert kinds(d / "m.json") == {"m.json": ("iteration metrics", None)}
    assert kinds(d / "r.json") == {"r.json": ("validation rejections", None)}
    assert kinds(d / "traj") == {"traj": ("trajectories", None)}
    assert kinds(d / "traj" / "episodes-00000.parquet")["episodes-00000.parquet"] == ("trajectory part", None)
    assert kinds(d) == {  # a directory of artifacts: each one inside
        "a.jsonl": ("task pool", None), "b.jsonl": ("probe table", None), "c.jsonl": ("eval records", None),
        "diagnosis.json": ("capability report", None), "m.json": ("iteration metrics", None),
        "r.json": ("validation rejections", None), "traj": ("trajectories", None)}


def test_violations_name_file_line_and_field(artifacts: Path) -> None:
    d = artifacts
    with (d / "a.jsonl").open("a") as f:
        f.write('{"instruction": "x"}\n')
    assert kinds(d / "a.jsonl")["a.jsonl"] == ("task pool", f"{d / 'a.jsonl'}:2: verifier: Field required")
    (d / "m.json").write_text(json.dumps({"heldout_pass_rate": 2, "promoted": True}))
    assert "m.json: iteration: Field required" in (kinds(d / "m.json")["m.json"][1] or "")
    (d / "r.json").write_text(json.dumps({"input": 9, "kept": 1, "rejected": {"parse": 2}}))
    assert kinds(d / "r.json")["r.json"][1] == f"{d / 'r.json'}: kept + rejected != input"
    (d / "traj" / "episodes-00000.parquet").write_bytes(b"not parquet")
    assert "not a readable Parquet file" in (kinds(d / "traj")["traj"][1] or "")
    (d / "z.jsonl").write_text("garbage\n")
    assert kinds(d / "z.jsonl")["z.jsonl"][1].startswith(f"{d / 'z.jsonl'}:1: not valid JSON")  # type: ignore[union-attr]


def test_iteration_dirs_by_name_or_by_content(artifacts: Path, tmp_path: Path) -> None:
    it = tmp_path / "runs" / "iter-2"
    shutil.copytree(artifacts / "diag", it / "diagnosis")
    shutil.copy(artifacts / "m.json", it / "metrics.json")
    found = {f.path.relative_to(it).as_posix(): f.error for f in check_path(it)}
    assert found["metrics.json"] is None and found["diagnosis/diagnosis.json"] is None
    assert found["policy"] == "missing" and found["pool/pool.jsonl"] == "missing"  # iteration 2 needs them
    copy = tmp_path / "copied-elsewhere"
    shutil.copytree(it, copy)  # no number: artifacts iteration 0 may lack are optional
    found = {f.path.relative_to(copy).as_posix(): f.error for f in check_path(copy)}
    assert found["policy"] == "missing" and "pool/pool.jsonl" not in found
    assert {f.path.parent.name for f in check_path(tmp_path / "runs")} >= {"iter-2"}  # a runs/ tree


def test_cli_exit_codes(artifacts: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["check", str(artifacts / "a.jsonl")])
    assert res.exit_code == 0 and "1 artifacts valid, 0 invalid" in res.output
    (artifacts / "b.jsonl").write_text('{"task_id": "x", "k": 1, "passes": 3, "errors": 0, "label": "nope"}\n')
    res = runner.invoke(app, ["check", str(artifacts)])
    assert res.exit_code == 1 and "6 artifacts valid, 1 invalid" in res.output
    row = next(x for x in res.output.splitlines() if "b.jsonl" in x)  # one whole line, not wrapped
    assert str(artifacts / "b.jsonl") in row and "label" in row
    (tmp_path / "notes.txt").write_text("hello")
    for bad in (tmp_path / "notes.txt", tmp_path / "nowhere", tmp_path / "empty"):
        if bad.name == "empty":
            bad.mkdir()
        with pytest.raises(ClawloopError):
            check_path(bad)
