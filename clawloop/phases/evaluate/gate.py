"""After an evaluation: the held-out gate (is the checkpoint worse than the policy?), promotion
(`policy/` is the checkpoint the next iteration starts from: the new one when the gate promotes
it, else the best so far), and the iteration's heldout.json and metrics.json."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from clawloop.artifacts import IterDir
from clawloop.artifacts.metrics import (
    HeldoutRecord,
    IterationMetrics,
    SuiteMetrics,
    gated,
    heldout_rate,
    read_heldout,
    read_metrics,
    write_metrics,
)
from clawloop.config.params import GateParams
from clawloop.core import paired
from clawloop.core.io import hand_over
from clawloop.core.paired import Comparison, Outcomes
from clawloop.core.stats import wilson_interval


def gate(candidate: Outcomes, policy: Outcomes | None, alpha: float, enabled: bool = True,
         suite_alpha: float | None = None) -> tuple[bool, Comparison | None, list[str]]:
    """Promote the checkpoint unless the paired comparison with the promoted `policy` on the same
    held-out tasks says it is worse: the exact one-sided sign test p <= `alpha` over all of them,
    or over one suite's alone p <= `suite_alpha` (`worse_suites`), or nothing of it was graded
    where the policy was. No policy yet (iteration 0): promoted.

    Returns (promoted, the comparison of the checkpoint against the policy, the suites found worse)."""
    if policy is None:
        return True, None, []
    cmp = paired.compare(policy, candidate)
    worse_on = worse_suites(candidate, policy, suite_alpha)
    worse = cmp.p_worse <= alpha or (cmp.paired == 0 and bool(policy)) or bool(worse_on)
    return (not enabled) or not worse, cmp, worse_on


def worse_suites(candidate: Outcomes, policy: Outcomes, suite_alpha: float | None) -> list[str]:
    """The held-out suites on which the checkpoint alone is worse than the policy: one-sided sign
    test p <= `suite_alpha` (None: none). The pooled test let iteration 2 of the timed default
    through with InterCode 3 -> 0 of 50 behind synth-heldout's noise (12 gained, 16 lost of 234,
    p = 0.57)."""
    if suite_alpha is None:
        return []
    return [s for s, c in paired.compare_suites(policy, candidate).items()
            if s != "all" and c.lost > c.gained and c.p_worse <= suite_alpha]


def heldout_record(iteration: int, checkpoint: Outcomes, previous: HeldoutRecord | None, *,
                   promoted: bool, vs_policy: Comparison | None, levels: dict[str, int] | None = None) -> HeldoutRecord:
    """This iteration's heldout.json from its checkpoint's verdicts and the gate's decision."""
    if previous is None:
        return HeldoutRecord(iteration=iteration, checkpoint=checkpoint, policy=checkpoint,
                             policy_from=iteration, base=checkpoint, levels=levels or {})
    return HeldoutRecord(
        iteration=iteration, checkpoint=checkpoint, base=previous.base,
        policy=checkpoint if promoted else previous.policy,
        policy_from=iteration if promoted else previous.policy_from,
        vs_policy=vs_policy.to_dict() if vs_policy else None,
        vs_base=paired.compare(previous.base, checkpoint).to_dict(), levels=previous.levels | (levels or {}))


def headline(iteration: int, suites: dict[str, SuiteMetrics], *, promoted: bool, best: float,
             policy_from: int, wall_s: float, record: HeldoutRecord | None = None,
             worse_on: list[str] | None = None) -> IterationMetrics:
    """The metrics.json row of an iteration from its suite figures, the gate's decision and its
    paired comparisons (`record`)."""
    held = list(gated(suites).values())
    graded = sum(s.graded for s in held)
    low, high = wilson_interval(sum(s.passed for s in held), graded)
    vs_base = (record.vs_base if record else None) or {}
    vs_policy = (record.vs_policy if record else None) or {}
    # Six places: the report prints three, and rounding twice turned 1/72's 0.00245 into 0.003.
    return IterationMetrics(
        iteration=iteration, heldout_pass_rate=heldout_rate(suites), heldout_ci_low=round(low, 6),
        heldout_ci_high=round(high, 6), promoted=promoted, best_heldout_pass_rate=best,
        policy_from=policy_from, format_error_episodes=sum(s.format_error_episodes for s in held),
        vs_base_gained=vs_base.get("gained", 0), vs_base_lost=vs_base.get("lost", 0),
        vs_base_p=vs_base.get("p_two_sided", 1.0), gate_p_worse=vs_policy.get("p_worse", 1.0),
        gate_worse_suites=list(worse_on or []),
        vs_base_suites=_per_suite(record) if record is not None and record.iteration > 0 else {}, wall_s=wall_s)


def _per_suite(record: HeldoutRecord) -> dict[str, dict[str, float]]:
    """metrics.json's per-suite base comparison (flat numbers: `dvc metrics show` columns)."""
    out = {}
    for suite, c in paired.compare_suites(record.base, record.checkpoint).items():
        if suite != "all" and c.paired:  # not an `at: ends` suite the checkpoint was not rolled out on
            out[suite] = {"base_rate": round(c.before_rate, 6), "rate": round(c.after_rate, 6),
                          "diff": round(c.diff, 6), "diff_low": round(c.diff_low, 6),
                          "diff_high": round(c.diff_high, 6), "p": round(c.p_two_sided, 6),
                          "p_permutation": round(c.p_permutation, 6)}
    return out


def gate_and_promote(iteration: int, figures: dict[str, SuiteMetrics], verdicts: Outcomes, *, checkpoint: Path,
           previous: Path | None, it_dir: Path, gate_params: GateParams, wall_s: float,
           levels: dict[str, int] | None = None, ends: Collection[str] = ()) -> IterationMetrics:
    """After an evaluation: gate the checkpoint against the policy of iteration dir `previous`,
    hand the winner over to `it_dir/policy`, write heldout.json and metrics.json. `gate_params`:
    params.yaml's gate section (alpha, enabled); `levels`: the held-out tasks' levels (heldout.json);
    `ends`: the names of the `at: ends` suites (also known from `figures` where they were rolled out)."""
    rate = heldout_rate(figures)
    it, last = IterDir(it_dir), IterDir(previous) if previous else None
    prev = read_metrics(last.metrics_json) if last else None
    before = read_heldout(last.heldout_json) if last else None
    # An `at: ends` suite (rolled out at iteration 0 and on the final policy, clawloop.phases.evaluate.ends)
    # never joins the gate: a checkpoint is rolled out on it at no iteration after 0, and iteration 0's
    # verdicts on it (the policy's while no checkpoint was promoted) pair with nothing. It stays out at the
    # last iteration too, on purpose: a benchmark that picks the final policy no longer measures it
    # without bias (base -> final on it would be selected on itself), and the last gate would weigh
    # evidence no other gate had. Iteration 0's verdicts stay in heldout.json's base for the report.
    at_ends = sorted(set(ends) | {name for name, s in figures.items() if s.at == "ends"})
    promoted, vs_policy, blocked = gate(paired.without_suites(verdicts, at_ends), paired.without_suites(before.policy, at_ends) if before else None,
                                        gate_params.alpha, gate_params.enabled, gate_params.suite_alpha)
    record = heldout_record(iteration, verdicts, before, promoted=promoted, vs_policy=vs_policy, levels=levels)
    if last is not None:
        hand_over(checkpoint if promoted else last.policy, it.policy)
    best = rate if promoted or prev is None else prev.best_heldout_pass_rate
    write_metrics(it.heldout_json, record)
    row = headline(iteration, figures, promoted=promoted, best=best, policy_from=record.policy_from,
                   wall_s=wall_s, record=record, worse_on=blocked)
    write_metrics(it.metrics_json, row)
    vs = f" vs the policy {vs_policy.words()}," if vs_policy else ""
    verdict = "promoted" if promoted else "not promoted (the policy stays)"
    if blocked:
        verdict += f"; worse on {', '.join(blocked)} alone (p <= {gate_params.suite_alpha:g})"
    if kept_out := [name for name in at_ends if name in figures]:
        verdict += f"; {', '.join(kept_out)} (at: ends) reported, not gated"
    print(f"[evaluate] iteration {iteration}: held-out pass@1 {rate:.3f},{vs} {verdict}")
    return row
