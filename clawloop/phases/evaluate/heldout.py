"""The loop's evaluation of a checkpoint: rollouts on the loop's suites, their figures and the
held-out verdicts the gate compares (the evaluate and transfer stages)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawloop.artifacts.metrics import EvalDetail, SuiteMetrics, suite_metrics
from clawloop.artifacts.suites import published_baselines
from clawloop.core.paired import Outcomes, compare_suites, levels_of, outcomes_of
from clawloop.core.tasks.task import Task

if TYPE_CHECKING:
    from clawloop.config.params import Params
    from clawloop.core.agent.harness import HarnessConfig
    from clawloop.core.rollout_settings import RolloutSettings
    from clawloop.policy.types import Policy

Suites = list[tuple[str, list[Task], bool]]
"""(name, tasks, held out) of each suite, as `suite_manifest.eval_suites` lists them."""


@dataclass
class SuiteResults:
    """A checkpoint's figures on every suite, and its per-task verdicts on the held-out ones."""

    figures: dict[str, SuiteMetrics] = field(default_factory=dict)
    verdicts: Outcomes = field(default_factory=dict)
    levels: dict[str, int] = field(default_factory=dict)
    """Held-out task key → level (clawloop.core.paired.levels_of)."""
    episodes: int = 0

    def detail(self, iteration: int, wall_s: float, number_format: object = None) -> EvalDetail:
        """eval/summary.json; `number_format`: the policy's (HFPolicy.number_format), if it has one."""
        return EvalDetail(iteration=iteration, suites=self.figures, wall_s=round(wall_s, 1),
                          episodes_per_s=round(self.episodes / wall_s, 3) if wall_s else 0.0,
                          number_format=None if number_format is None else str(number_format))


def evaluate_suites(params: Params, ctx: RolloutSettings, suites: Suites, *, policy: Policy, harness: HarnessConfig,
                    out_dir: Path, iteration: int) -> SuiteResults:
    """Roll `policy` out under `harness` on each suite, `eval.samples` per task, trajectories under
    `out_dir/<suite>`; each suite's figures carry the published baselines of its tasks and its `at`
    (the verdicts of an `at: ends` suite are kept too: the report pairs them base -> final)."""
    results = SuiteResults()
    at = {s.name: s.at for s in params.eval.suites}
    for name, tasks, heldout in suites:
        summaries = ctx.rollouts(tasks, policy, k=params.eval.samples, harness=harness, out_dir=out_dir / name,
                                 iteration=iteration, suite=name, progress=True)
        figures = results.figures[name] = suite_metrics(summaries, heldout=heldout).model_copy(update={
            "baselines": published_baselines(params, name, [e.name for e in summaries]),
            "at": at.get(name, "every")})
        if heldout:
            results.verdicts |= outcomes_of(summaries, name)
            results.levels |= levels_of(summaries, name)
        results.episodes += len(summaries)
        print(f"[evaluate] {name}: pass@1 {figures.pass_at_1:.3f} over {figures.tasks} tasks")
    return results


def heldout_verdicts(ctx: RolloutSettings, policy: Policy, suites: list[tuple[str, list[Task]]]) -> tuple[Outcomes, float]:
    """`policy`'s per-task verdicts on the held-out `suites` (one sample per task, the plain harness;
    keyed `suite/task` as clawloop.core.paired keys them) and their pass@1 pooled over every graded task, as
    metrics.json's held-out pass@1 is (a mean of the suites' rates would weigh InterCode's 50 tasks as
    synth-heldout's 112)."""
    verdicts: Outcomes = {}
    for suite, tasks in suites:
        verdicts |= outcomes_of(ctx.rollouts(tasks, policy, suite=suite, progress=True), suite)
    return verdicts, (sum(verdicts.values()) / len(verdicts) if verdicts else 0.0)


def paired_rows(before: Outcomes, after: Outcomes) -> dict[str, dict[str, Any]]:
    """Per suite (and "all"), `after` against `before` on the tasks both graded: the rates, the paired
    difference with its 95% bootstrap interval, the flips and the exact McNemar p (the transfer stage's
    first vs final)."""
    return {name: {"tasks": c.paired, "before": round(c.before_rate, 4), "after": round(c.after_rate, 4),
                   "diff": round(c.diff, 4), "diff_low": round(c.diff_low, 4), "diff_high": round(c.diff_high, 4),
                   "gained": c.gained, "lost": c.lost, "p_mcnemar": round(c.p_two_sided, 6)}
            for name, c in compare_suites(before, after).items()}
