"""Loop bookkeeping: the held-out gate, policy hand-over, suite metrics, check and report."""

from dataclasses import dataclass
from pathlib import Path

import pytest

from clawloop.artifacts import metrics as artifact_metrics
from clawloop.core import io
from clawloop.errors import ClawloopError
from clawloop.phases.evaluate import gate as gating


def _metrics(best: float, policy_from: int = 1) -> artifact_metrics.IterationMetrics:
    return artifact_metrics.IterationMetrics(iteration=1, heldout_pass_rate=best, promoted=True,
                                 best_heldout_pass_rate=best, policy_from=policy_from, wall_s=1.0)


@dataclass
class _Ep:
    task_id: str
    outcome: str
    reward: float | None
    termination: str = "submit"


def test_suite_metrics_pass_at_1_and_k() -> None:
    eps = [_Ep("a", "passed", 1.0), _Ep("a", "failed", 0.0), _Ep("b", "failed", 0.0, "format_errors"),
           _Ep("b", "failed", 0.0, "format_errors"), _Ep("c", "error", None), _Ep("c", "error", None)]
    m = artifact_metrics.suite_metrics(eps, heldout=True)
    assert m.tasks == 3 and m.episodes == 6 and m.errors == 2 and m.passed == 1
    assert m.format_error_episodes == 2
    assert m.pass_at_1 == pytest.approx(0.25)      # errors are not failures: c is not graded
    assert m.pass_at_k == pytest.approx(0.5)
    assert artifact_metrics.heldout_rate({"x": m, "y": m.model_copy(update={"heldout": False, "pass_at_1": 1.0})}) \
        == pytest.approx(0.25)
    # Two held-out suites weigh by their graded episodes (2/72 and 10/50 -> 12/122, not the mean 0.114),
    # the rate the pooled Wilson interval of metrics.json is about.
    sc = m.model_copy(update={"pass_at_1": 2 / 72, "graded": 72, "passed": 2})
    ic = m.model_copy(update={"pass_at_1": 10 / 50, "graded": 50, "passed": 10})
    assert artifact_metrics.heldout_rate({"shell-core": sc, "intercode": ic}) == pytest.approx(12 / 122)
    row = gating.headline(0, {"shell-core": sc, "intercode": ic}, promoted=True, best=0.0, policy_from=0, wall_s=1.0)
    assert row.heldout_ci_low < row.heldout_pass_rate < row.heldout_ci_high


def test_eval_summary_and_loop_metrics_report_the_same_pass_rate() -> None:
    """`clawloop eval` pooled episodes (passed / graded) while the loop averaged per task: with
    several samples and uneven errors they disagreed (here 1/3 against 1/2). Both are pass@1 now,
    the per-task mean (the usual definition: each task weighs the same, whatever errored)."""
    from clawloop.core.trajectory import EpisodeRecord
    from clawloop.phases.evaluate.agent_eval import summarize

    outcomes = [("a", "passed", 1.0), ("a", "error", None), ("b", "failed", 0.0), ("b", "failed", 0.0),
                ("c", "skipped", None)]
    records = [EpisodeRecord(t, t, "s", "files", 1, "model", o, r) for t, o, r in outcomes]
    summary = summarize(records, "model", "bwrap")
    metrics = artifact_metrics.suite_metrics(records, heldout=True)  # the same records: one summary, two layouts
    assert summary["pass_rate"] == metrics.pass_at_1 == 0.5
    assert summary["suites"]["s"]["pass_rate"] == summary["skills"]["files"]["pass_rate"] == 0.5
    assert (summary["passed"], summary["failed"], summary["errors"], summary["skipped"]) == (1, 2, 1, 1)
    assert (metrics.passed, metrics.errors, metrics.skipped, metrics.graded) == (1, 1, 1, 3)
    one_each = [EpisodeRecord(t, t, "s", "files", 1, "oracle", o, r) for t, o, r in
                [("a", "passed", 1.0), ("b", "failed", 0.0), ("c", "failed", 0.0), ("d", "error", None)]]
    assert summarize(one_each, "oracle", "bwrap")["pass_rate"] == round(1 / 3, 4)  # = passed / (passed + failed)
    assert summarize(one_each[3:], "oracle", "bwrap")["pass_rate"] is None           # nothing graded
    # the one place the layouts differ: nothing graded is None for eval, 0.0 for the stage's gate
    assert artifact_metrics.suite_metrics(one_each[3:], heldout=True).pass_at_1 == 0.0
    model = [EpisodeRecord("a", "a", "s", "files", 1, "model", "failed", 0.0, termination="format_errors"),
             EpisodeRecord("", "b", "s", "", 0, "model", "error", reason="bad", unloadable=True)]
    assert artifact_metrics.suite_metrics(model, heldout=True).format_error_episodes == 1
    assert (summarize(model, "model", "bwrap")["unloadable"], summarize(model, "model", "bwrap")["errors"]) == (1, 1)


def test_hand_over_replaces_atomically(tmp_path: Path) -> None:
    src = tmp_path / "ckpt"
    src.mkdir()
    (src / "config.json").write_text("{}")
    dst = tmp_path / "policy"
    dst.mkdir()
    (dst / "stale.bin").write_text("old")
    io.hand_over(src, dst)
    assert sorted(p.name for p in dst.iterdir()) == ["config.json"]
    with pytest.raises(ClawloopError, match="not found"):
        io.hand_over(tmp_path / "missing", dst)
    assert (dst / "config.json").exists()       # a failed hand-over leaves the old policy


def test_read_metrics_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    path.write_text('{"iteration": 1}')
    with pytest.raises(ClawloopError, match="metrics.json: heldout_pass_rate"):
        artifact_metrics.read_metrics(path)


def test_headline_keeps_dvc_metrics_show_narrow() -> None:
    """metrics.json holds a few numbers with the held-out interval; suites go to the detail file."""
    held = artifact_metrics.SuiteMetrics(tasks=10, episodes=10, passed=5, errors=0, skipped=0, pass_at_1=0.5,
                             pass_at_k=0.5, mean_reward=0.5, format_error_episodes=2, graded=10)
    pool = held.model_copy(update={"heldout": False, "passed": 9, "pass_at_1": 0.9})
    m = gating.headline(1, {"shell-core": held, "pool": pool}, promoted=True, best=0.5, policy_from=1, wall_s=3.0)
    row = m.model_dump()
    # + the paired figures vs iteration 0, the gate's p and the suites it found worse (a list:
    # `dvc metrics show` prints numbers only)
    assert "suites" not in row and len(row) <= 15
    assert m.heldout_pass_rate == 0.5 and m.format_error_episodes == 2
    assert m.heldout_ci_low < 0.5 < m.heldout_ci_high
