"""The sampled evaluation (eval.sampled): k samples per task of the base and of the final policy, the
power a 5-10 point change needs, and the paired comparison of the two (vs-base.json)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from clawloop.artifacts.metrics import SampledEval, read_sampled, suite_metrics, write_metrics
from clawloop.artifacts.stage import output_dir
from clawloop.artifacts.suites import eval_suites
from clawloop.config.params import Params
from clawloop.core.io import write_json
from clawloop.core.paired import Comparison, by_level, compare_suites, levels_of, outcomes_of
from clawloop.core.rollout_settings import rollout_settings
from clawloop.errors import ClawloopError

SAMPLED_OUTCOMES = "outcomes.json"
"""A sampled evaluation's settings, figures and per-task pass rates (clawloop.artifacts.metrics.SampledEval)."""


def vs_base(base: SampledEval, final: SampledEval) -> dict[str, Any]:
    """evaluate-sampled-final's metrics: per suite (and per level where the tasks' levels are known), the
    base's and the final policy's mean per-task pass rate over k samples, the paired difference with
    its bootstrap interval, the paired permutation test on the per-task rates (the sign test
    beside it counts only which tasks moved), and the tasks each solved in any of its k samples.
    Refuses two evaluations sampled differently."""
    for key in ("k", "temperature"):
        if getattr(base, key) != getattr(final, key):
            raise ClawloopError(f"sampled evaluations differ in {key}: base {getattr(base, key)}, final "
                                f"{getattr(final, key)} (rerun the base's: `dvc repro -f -s evaluate-sampled-base`)")
    before, after = base.outcomes, final.outcomes
    out: dict[str, Any] = {"k": final.k, "temperature": final.temperature}
    for name, c in compare_suites(before, after).items():
        if name == "all":
            continue
        row = _sampled_row(c)
        levels = by_level(before, after, name, base.levels | final.levels)
        if levels:
            row["levels"] = {f"L{lv}": _sampled_row(lc) for lv, lc in levels.items()}
        out[name] = row
    return out


def _sampled_row(c: Comparison) -> dict[str, Any]:
    return {"tasks": c.paired, "base": round(c.before_rate, 4), "final": round(c.after_rate, 4),
            "diff": round(c.diff, 4), "diff_low": round(c.diff_low, 4), "diff_high": round(c.diff_high, 4),
            "p_permutation": round(c.p_permutation, 6), "p_sign": round(c.p_two_sided, 6),
            "better": c.gained, "worse": c.lost, "base_solved": c.before_solved, "final_solved": c.after_solved}


def evaluate_sampled(params: Params, *, iteration: int, policy: Path, out: Path, suites: Path | None = None,
                     base: Path | None = None, metrics: Path | None = None) -> SampledEval:
    """k samples per task of `policy` on the suites of `eval.sampled` into `out` (trajectories and
    outcomes.json); with `base` (the base's sampled evaluation), the paired comparison goes to
    `metrics` (default: vs-base.json beside `out`)."""
    cfg = params.eval.sampled
    before = read_sampled(base / SAMPLED_OUTCOMES) if base else None  # a bad one fails before any rollout
    t0 = time.perf_counter()
    ctx = rollout_settings(params)
    chosen = eval_suites(params, suites, only=cfg.suites)
    model = ctx.load_policy(policy, policy_id=f"iter-{iteration}") if chosen else None
    harness = ctx.harness_for(policy)  # its playbook, if any
    outcomes, levels, figures = {}, {}, {}
    with output_dir(out) as tmp:
        for name, tasks, _ in chosen:
            summaries = ctx.rollouts(tasks, model, k=cfg.k, sampling=ctx.sampling_at(cfg.temperature), harness=harness,
                                     out_dir=tmp / name, iteration=iteration, suite=name, progress=True)
            outcomes |= outcomes_of(summaries, name)
            levels |= levels_of(summaries, name)
            figures[name] = m = suite_metrics(summaries, heldout=True)
            print(f"[evaluate-sampled] {name}: {m.passed}/{m.episodes} samples passed "
                  f"({len(tasks)} tasks × {cfg.k} at T {cfg.temperature})")
        result = SampledEval(k=cfg.k, temperature=cfg.temperature, suites=figures, outcomes=outcomes, levels=levels)
        write_metrics(tmp / SAMPLED_OUTCOMES, result)
    if before is not None:
        comparison = vs_base(before, result)
        write_json(metrics or out.parent / "vs-base.json", comparison)
        for name, row in comparison.items():
            if isinstance(row, dict):
                print(f"[evaluate-sampled] {name}: base {row['base']:.3f} → final {row['final']:.3f} "
                      f"({row['diff']:+.3f} [{row['diff_low']:+.3f}, {row['diff_high']:+.3f}]), "
                      f"paired permutation p = {row['p_permutation']:.3g}; solved in any of {result.k} samples: "
                      f"{row['base_solved']} → {row['final_solved']} of {row['tasks']} tasks")
    print(f"[evaluate-sampled] done in {time.perf_counter() - t0:.0f} s → {out}")
    return result
