"""The `at: ends` suites (eval.suites entries evaluated at the ends of the loop only): iteration 0's
evaluation rolls them out like any suite, `evaluate@N` skips them, and the stage `evaluate-final`
rolls out the final *policy* (runs/iter-<loop.last>/policy, the checkpoint the gate kept: the last
one, or an earlier one where the last gate refused it) on them, paired with iteration 0 task by task.

Why a stage of its own, not evaluate@<loop.last>: whether an iteration is the last is known only
from `loop.last`, and an evaluate stage that read it would rerun every iteration when the loop is
extended by one; and the final policy, not the last checkpoint, is what the loop hands over, so
base -> final on a benchmark pairs the figures of the policy the report calls final."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from clawloop.artifacts import IterDir
from clawloop.artifacts.metrics import read_heldout, write_metrics
from clawloop.artifacts.stage import output_dir
from clawloop.artifacts.suites import eval_suites
from clawloop.config.params import Params
from clawloop.core.io import write_json
from clawloop.core.paired import of_suites
from clawloop.core.rollout_settings import rollout_settings
from clawloop.phases.evaluate.heldout import SuiteResults, evaluate_suites, paired_rows

ENDS_OUTCOMES = "outcomes.json"
"""evaluate-final's per-task verdicts: {iteration, policy_from, suites, verdicts} (the report pairs them)."""


def evaluate_final(params: Params, *, iteration: int, final: Path, base: Path, out: Path,
                   suites: Path | None = None, metrics: Path | None = None) -> dict[str, Any]:
    """Roll the policy of iteration dir `final` out on the `at: ends` suites into `out` (trajectories,
    summary.json, outcomes.json), pair it with iteration dir `base`'s verdicts on them and write that
    to `metrics` (default: vs-base.json beside `out`). Nothing exported: nothing rolled out, no model
    loaded, and the files say so (no suites)."""
    t0 = time.perf_counter()
    names = [s.name for s in params.eval.suites if s.at == "ends"]
    record, before = read_heldout(IterDir(final).heldout_json), read_heldout(IterDir(base).heldout_json)
    chosen = eval_suites(params, suites, only=names) if names else []
    with output_dir(out) as tmp:
        results = SuiteResults()
        if chosen:
            ctx = rollout_settings(params)
            policy = IterDir(final).policy
            model = ctx.load_policy(policy, policy_id=f"iter-{record.policy_from}")
            results = evaluate_suites(params, ctx, chosen, policy=model, harness=ctx.harness_for(policy), out_dir=tmp,
                                      iteration=iteration)
        write_metrics(tmp / "summary.json", results.detail(iteration, time.perf_counter() - t0))
        write_json(tmp / ENDS_OUTCOMES, {"iteration": iteration, "policy_from": record.policy_from,
                                         "suites": [name for name, _, _ in chosen], "verdicts": results.verdicts})
    rows = paired_rows(of_suites(before.base, names), results.verdicts)
    rows.pop("all", None)  # each benchmark on its own: a pooled row would weigh them by their sizes
    write_json(metrics or out.parent / "vs-base.json", {"policy_from": record.policy_from, **rows})
    for name, row in rows.items():
        print(f"[evaluate-final] {name}: iteration 0 {row['before']:.3f} → the final policy (iteration "
              f"{record.policy_from}) {row['after']:.3f} on {row['tasks']} tasks, McNemar p = {row['p_mcnemar']:.3g}")
    if not chosen:
        print("[evaluate-final] no `at: ends` suite to roll out (none listed, or none exported)")
    return rows
