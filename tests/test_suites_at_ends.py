"""`eval.suites` entries with `at: ends` (a benchmark rolled out at iteration 0 and on the final policy
only, stage evaluate-final): the evaluate stage skips them after iteration 0, the gate never weighs
them, and the report pairs them base -> final like any suite, the final policy's own figures. No
sandbox, no model: the rollouts are scripted verdicts."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from clawloop.artifacts import metrics as artifact_metrics
from clawloop.config.params import GateParams, Params
from clawloop.core.io import read_json
from clawloop.phases.evaluate import gate as gating

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "fixtures" / "harbor"  # three Harbor tasks: convert-slides, region-totals, word-count
PASSING = {"iter-0": {"mini/word-count", "bench/word-count"},
           "iter-1": {"mini/word-count", "mini/region-totals", "mini/convert-slides", "bench/word-count",
                      "bench/region-totals"},
           "iter-3": set()}
"""Policy id -> the `suite/task` keys it passes: iteration 3's checkpoint loses mini 3 -> 0 and is refused."""


class _Rollouts:
    """The RolloutSettings the evaluate phases use, with scripted verdicts (PASSING, by policy id);
    each rollout is recorded as (policy id, iteration, suite)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, str]] = []

    def harness_for(self, checkpoint: Path) -> None:
        return None

    def load_policy(self, checkpoint: Path, policy_id: str) -> str:
        return policy_id

    def rollouts(self, tasks: list[Any], policy: str, *, iteration: int, suite: str, **_: Any) -> list[Any]:
        self.seen.append((policy, iteration, suite))
        return [SimpleNamespace(task_id=t.id, name=t.name, reward=0.0, termination=None, skill="general", level=1,
                                outcome="passed" if f"{suite}/{t.name}" in PASSING[policy] else "failed")
                for t in tasks]


def _params() -> Params:
    return Params.model_validate({"eval": {"suites": [
        {"name": "mini", "path": str(SUITE), "format": "harbor"},
        {"name": "bench", "path": str(SUITE), "format": "harbor", "at": "ends"}],
        "pool_sample": 0, "fresh": 0, "sampled": {"suites": []}}})  # loop: 3 iterations, last 3


def _loop(runs: Path, monkeypatch: pytest.MonkeyPatch) -> _Rollouts:
    """evaluate-base, evaluate@1, evaluate@3 (previous: 1) and evaluate-final, on scripted verdicts."""
    from clawloop.phases.evaluate import ends, evaluate

    fake = _Rollouts()
    monkeypatch.setattr(evaluate, "rollout_settings", lambda params: fake)
    monkeypatch.setattr(ends, "rollout_settings", lambda params: fake)
    for it, previous in ((0, None), (1, 0), (3, 1)):
        checkpoint = runs / f"iter-{it}" / ("policy" if previous is None else "checkpoint")
        checkpoint.mkdir(parents=True)
        (checkpoint / "weights").write_text(f"iteration {it}")
        evaluate.evaluate_iteration(_params(), iteration=it, checkpoint=checkpoint, out=runs / f"iter-{it}" / "eval",
                                    previous=runs / f"iter-{previous}" if previous is not None else None)
    ends.evaluate_final(_params(), iteration=3, final=runs / "iter-3", base=runs / "iter-0",
                        out=runs / "ends" / "final")
    return fake


def test_an_ends_suite_is_rolled_out_at_iteration_0_and_on_the_final_policy_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert _params().eval.suites[1].at == "ends" and _params().eval.suites[0].at == "every"  # the default: every
    runs = tmp_path / "runs"
    fake = _loop(runs, monkeypatch)
    out = capsys.readouterr().out
    assert "bench: skipped at iteration 1 (at: ends: rolled out at iteration 0 and on the final policy" in out
    # Iteration 3's checkpoint was refused: the final policy is iteration 1's, and that is what ran bench.
    assert fake.seen == [("iter-0", 0, "mini"), ("iter-0", 0, "bench"), ("iter-1", 1, "mini"), ("iter-3", 3, "mini"),
                         ("iter-1", 3, "bench")]
    summary = {i: read_json(runs / f"iter-{i}" / "eval" / "summary.json")["suites"] for i in (0, 1, 3)}
    assert sorted(summary[1]) == sorted(summary[3]) == ["mini"] and summary[0]["bench"]["at"] == "ends"
    # The held-out pass@1 is the every-iteration suites' alone, at iteration 0 too: comparable across iterations.
    rows = {i: read_json(runs / f"iter-{i}" / "metrics.json") for i in (0, 1, 3)}
    assert [rows[i]["heldout_pass_rate"] for i in (0, 1, 3)] == pytest.approx([1 / 3, 1, 0])
    assert rows[1]["promoted"] and not rows[3]["promoted"] and rows[3]["policy_from"] == 1
    assert sorted(rows[1]["vs_base_suites"]) == ["mini"]    # bench: not rolled out at 1, no row of zeros
    vs = read_json(runs / "ends" / "vs-base.json")
    assert vs["policy_from"] == 1 and sorted(vs) == ["bench", "policy_from"]
    assert (vs["bench"]["tasks"], vs["bench"]["before"], vs["bench"]["gained"]) == (3, 0.3333, 1)


def _figures(suites: dict[str, tuple[int, int]], ends: tuple[str, ...] = ()) -> dict[str, artifact_metrics.SuiteMetrics]:
    return {name: artifact_metrics.SuiteMetrics(tasks=n, episodes=n, passed=p, errors=0, skipped=0, pass_at_1=p / n,
                                                pass_at_k=p / n, mean_reward=0.0, graded=n,
                                                at="ends" if name in ends else "every")
            for name, (p, n) in suites.items()}


def _verdicts(suite: str, passing: set[int], n: int = 4) -> dict[str, float]:
    return {f"{suite}/t{i}": float(i in passing) for i in range(n)}


def _gated(runs: Path, it: int, previous: int | None, suites: dict[str, tuple[int, int]], verdicts: dict[str, float],
           ends: tuple[str, ...] = ("bench",)) -> artifact_metrics.IterationMetrics:
    """What evaluate@it leaves: eval/summary.json, then the gate (heldout.json, metrics.json, policy/)."""
    d = runs / f"iter-{it}"
    figures = _figures(suites, ends)
    artifact_metrics.write_metrics(d / "eval" / "summary.json", artifact_metrics.EvalDetail(
        iteration=it, suites=figures, episodes_per_s=1.0, wall_s=1.0))
    checkpoint = d / ("policy" if previous is None else "checkpoint")  # iteration 0's is the bootstrap policy
    checkpoint.mkdir(parents=True)
    (checkpoint / "weights").write_text(f"iteration {it}")
    return gating.gate_and_promote(it, figures, verdicts, checkpoint=checkpoint,
                                   previous=runs / f"iter-{previous}" if previous is not None else None, it_dir=d,
                                   gate_params=GateParams(), wall_s=1.0, ends=ends)


def test_the_gate_never_weighs_an_ends_suite(tmp_path: Path) -> None:
    base = _verdicts("mini", {0, 1, 2}) | _verdicts("bench", {0, 1, 2, 3})
    # An intermediate iteration: bench absent; the policy (iteration 0's) has verdicts on it that nothing pairs.
    runs = tmp_path / "runs"
    _gated(runs, 0, None, {"mini": (3, 4), "bench": (4, 4)}, base)
    row = _gated(runs, 1, 0, {"mini": (3, 4)}, _verdicts("mini", {0, 1, 2}))
    assert row.promoted and row.gate_worse_suites == [] and row.vs_base_suites.keys() == {"mini"}
    # Were a checkpoint rolled out on bench against a policy kept from iteration 0 (iteration 1 lost mini
    # 3 -> 0): bench loses all four (alone a sign test says worse, p = 0.0625), mini holds at 3 of 4. The
    # gate reads mini only and promotes: a benchmark kept for the ends never picks the policy.
    kept = tmp_path / "kept"
    _gated(kept, 0, None, {"mini": (3, 4), "bench": (4, 4)}, base)
    assert not _gated(kept, 1, 0, {"mini": (0, 4)}, _verdicts("mini", set())).promoted
    row = _gated(kept, 3, 1, {"mini": (3, 4), "bench": (0, 4)}, _verdicts("mini", {0, 1, 2}) | _verdicts("bench", set()))
    assert row.promoted and row.gate_worse_suites == [] and row.heldout_pass_rate == 0.75
    assert row.vs_base_suites["bench"]["diff"] == -1.0
    # A loop whose only held-out suite is at the ends: nothing to gate between, the checkpoint is promoted
    # (the policy's bench verdicts are not "graded where the policy was" evidence against it).
    only = tmp_path / "only"
    _gated(only, 0, None, {"bench": (2, 4)}, _verdicts("bench", {0, 1}))
    assert _gated(only, 1, 0, {}, {}).promoted


def test_the_report_pairs_an_ends_suite_base_to_the_final_policy(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from clawloop.report.collect import collect
    from clawloop.report.render import context, render

    runs = tmp_path / "runs"
    _loop(runs, monkeypatch)
    html, md = render(context(collect(runs), {}, viewer=None, ablations=[]))
    # bench's own row: iteration 0 -> the final policy (iteration 1's: iteration 3's checkpoint was refused),
    # 1 -> 2 of 3; kept out of the pooled "all", which is mini's alone (1 -> 3 of 3).
    assert ("| iteration 0 → final policy (iteration 1; stage evaluate-final) | bench (at: ends) | 3 | 1 | 0 | "
            "+0.333") in md
    assert "| iteration 0 → final policy (iteration 1) | all held-out but the at: ends suites | 3 | 2 | 0 | +0.667" in md
    assert "| iteration 0 → 1 | bench" not in md and "| iteration 1 → 3 | mini | 3 | 0 | 3 |" in md  # no pairs: no row
    assert "bench (at: ends)" in html
