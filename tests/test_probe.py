"""Agent-based validation: labelling from episode results, the side table, selection, wiring."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from clawloop.artifacts.probe import (
    ProbeResult,
    label_episodes,
    label_of,
    read_episode_rows,
    read_probe,
    select_by_label,
    summarize,
    write_probe,
)
from clawloop.core.agent.rollout import RolloutConfig
from clawloop.core.tasks.task import Task, Verifier
from clawloop.errors import ClawloopError
from clawloop.phases.diagnose.synthetic import episode_row, write_trajectories
from clawloop.phases.validate import probe
from clawloop.phases.validate.probe import probe_tasks


@pytest.mark.parametrize(("passes", "graded", "label"), [
    (4, 4, "too_easy"), (1, 4, "learnable"), (3, 4, "learnable"), (0, 4, "frontier"),
    (0, 0, "unprobed"), (1, 1, "too_easy"),
])
def test_label_of(passes: int, graded: int, label: str) -> None:
    assert label_of(passes, graded) == label


def _eps(task: str, *outcomes: str) -> list[dict[str, Any]]:
    return [{"task_id": task, "outcome": o} for o in outcomes]


def test_label_episodes() -> None:
    eps = (_eps("easy", "passed", "passed", "passed", "passed")
           + _eps("mid", "passed", "failed", "failed", "passed")
           + _eps("hard", "failed", "failed", "failed", "failed")
           + _eps("flaky_infra", "passed", "error", "skipped", "passed")
           + _eps("broken", "error", "error", "error", "error")
           + _eps("short", "failed", "passed"))
    got = label_episodes(eps, k=4, task_ids=["never"])
    assert list(got) == ["never", "easy", "mid", "hard", "flaky_infra", "broken", "short"]
    assert {t: r.label for t, r in got.items()} == {
        "never": "unprobed", "easy": "too_easy", "mid": "learnable", "hard": "frontier",
        "flaky_infra": "too_easy", "broken": "unprobed", "short": "learnable"}
    assert got["mid"] == ProbeResult(task_id="mid", k=4, passes=2, errors=0, label="learnable")
    assert (got["flaky_infra"].errors, got["flaky_infra"].graded) == (2, 2)
    assert (got["short"].k, got["short"].errors, got["short"].pass_rate) == (4, 2, 0.5)
    assert (got["never"].k, got["never"].errors) == (4, 4)
    assert summarize(got.values()) == {"too_easy": 2, "learnable": 2, "frontier": 1, "unprobed": 2}


def test_label_episodes_without_k_and_too_many() -> None:
    got = label_episodes(_eps("t", "passed", "failed", "failed"))
    assert (got["t"].k, got["t"].passes, got["t"].label) == (3, 1, "learnable")
    with pytest.raises(ClawloopError, match="3 episodes for k=2"):
        label_episodes(_eps("t", "passed", "failed", "failed"), k=2)


def _tasks() -> list[Task]:
    v = Verifier(files={"test.sh": {"content": "exit 0"}})
    return [Task(instruction=f"task {i}", verifier=v) for i in range(4)]


def test_side_table_and_selection(tmp_path: Path) -> None:
    tasks = _tasks()
    results = [ProbeResult(task_id=tasks[0].id, k=2, passes=2, errors=0, label="too_easy"),
               ProbeResult(task_id=tasks[1].id, k=2, passes=1, errors=0, label="learnable"),
               ProbeResult(task_id=tasks[2].id, k=2, passes=0, errors=0, label="frontier")]
    assert write_probe(tmp_path / "probe.jsonl", results) == 3
    probe = read_probe(tmp_path / "probe.jsonl")
    assert list(probe.values()) == results
    assert select_by_label(tasks, probe, ["learnable", "frontier"]) == tasks[1:3]
    assert select_by_label(tasks, probe, ["unprobed"]) == [tasks[3]]  # missing from the table
    with pytest.raises(ClawloopError, match="not among"):
        select_by_label(tasks, probe, ["hard"])


def test_bad_probe_table(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"task_id": "a", "k": 2, "passes": 1, "errors": 0, "label": "meh"}\n')
    with pytest.raises(ClawloopError, match=r"p\.jsonl:1: label"):
        read_probe(tmp_path / "p.jsonl")


@pytest.fixture
def fake_rollout(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """A stand-in clawloop.core.agent.rollout.run_rollouts: task i passes its first i samples (task 3's
    first sample is an infrastructure error)."""
    calls: list[dict[str, Any]] = []

    def run_rollouts(tasks: list[Task], policy: Any, config: RolloutConfig, *, out_dir: Path | None,
                     progress: bool = True) -> list[Any]:
        calls.append({"n": len(tasks), "k": config.k, "batch_size": config.batch_size, "backend": config.backend,
                      "suite": config.suite})
        rows = [episode_row(f"{t.id}-{s}-x", task_id=t.id, sample=s,
                            outcome="error" if (i, s) == (3, 0) else "passed" if s < i else "failed")
                for i, t in enumerate(tasks) for s in range(config.k)]
        if out_dir is not None:
            write_trajectories(out_dir, rows, [])
        return [types.SimpleNamespace(**r) for r in rows]  # like trajectory.EpisodeRecord

    monkeypatch.setattr(probe, "run_rollouts", run_rollouts)
    return calls


def test_probe_tasks_wiring(tmp_path: Path, fake_rollout: list[dict[str, Any]]) -> None:
    tasks = _tasks()
    results = probe_tasks(tasks + [tasks[0]], object(), RolloutConfig(k=3, batch_size=8, backend="local"),
                          out_dir=tmp_path / "traj")
    assert fake_rollout == [{"n": 4, "k": 3, "batch_size": 8, "backend": "local", "suite": "probe"}]
    assert [r.label for r in results] == ["frontier", "learnable", "learnable", "too_easy", "frontier"]
    assert [(r.passes, r.errors) for r in results[:4]] == [(0, 0), (1, 0), (2, 0), (2, 1)]
    assert len(read_episode_rows(tmp_path / "traj")) == 12
    with pytest.raises(ClawloopError, match="already holds episodes"):
        probe_tasks(tasks, object(), RolloutConfig(k=3), out_dir=tmp_path / "traj")
    assert [r.label for r in probe_tasks(tasks, object(), RolloutConfig(k=3))] == [
        "frontier", "learnable", "learnable", "too_easy"]  # no trajectories kept


def test_cli_probe(tmp_path: Path, fake_rollout: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    from scripted_policy import ScriptedPolicy
    from typer.testing import CliRunner

    from clawloop.commands import app, tasks_cmd  # tasks_cmd registers the commands
    from clawloop.core.tasks.pool import read_pool, write_pool

    monkeypatch.setattr(tasks_cmd, "load_policy", lambda spec: ScriptedPolicy([]))
    write_pool(tmp_path / "pool.jsonl", _tasks())
    res = CliRunner().invoke(app, ["tasks", "probe", str(tmp_path / "pool.jsonl"), "--model", "m", "--k", "3",
                                   "--out", str(tmp_path / "probe.jsonl"), "--backend", "local"])
    assert res.exit_code == 0, res.output
    assert "too_easy 1, learnable 2, frontier 1, unprobed 0" in res.output
    probe = read_probe(tmp_path / "probe.jsonl")
    pool = read_pool(tmp_path / "pool.jsonl")
    assert [t.id for t in select_by_label(pool, probe, ["learnable"])] == [pool[1].id, pool[2].id]


def test_probe_and_diagnose_end_to_end(tmp_path: Path) -> None:
    """Real rollouts (bwrap sandbox, scripted policy) → probe labels → the diagnosis of their trajectories."""
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    from scripted_policy import ScriptedPolicy

    from clawloop.phases.diagnose.diagnose import diagnose

    test = "test -f /workspace/done && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt"
    v = Verifier(files={"test.sh": {"content": test}})
    doable = Task(instruction="create the file done", skill="files", verifier=v)
    lazy = Task(instruction="create the file done, but you will not", skill="text", verifier=v)
    call = '<tool_call>\n{{"name": "{}", "arguments": {}}}\n</tool_call>'
    touch, submit = call.format("bash", '{"command": "touch done"}'), call.format("submit", "{}")

    def reply(conv: list[dict[str, Any]]) -> str:
        if any("you will not" in str(m.get("content")) for m in conv if m.get("role") == "user"):
            return submit
        return touch if not any(m.get("role") == "assistant" for m in conv) else submit

    results = probe_tasks([doable, lazy], ScriptedPolicy(reply), RolloutConfig(k=2, backend="bwrap", batch_size=4),
                          out_dir=tmp_path / "traj")
    if any(r.errors for r in results):
        pytest.skip("the bwrap sandbox does not work here")
    assert [(r.label, r.passes) for r in results] == [("too_easy", 2), ("frontier", 0)]
    report = diagnose([tmp_path / "traj"])
    assert report.pass_rate == 0.5
    assert {m.mode: m.count for m in report.failure_modes if m.count} == {"premature_submit": 2}
    assert [(c.command, c.count) for c in report.commands] == [("touch", 2)]
