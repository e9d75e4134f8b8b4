"""The evaluate stage of iteration N: roll out the new checkpoint on the held-out suites, a sample
of the validated pool and the fresh instances, then gate its promotion (clawloop.phases.evaluate.gate)."""

from __future__ import annotations

import time
from pathlib import Path

from clawloop.artifacts.metrics import IterationMetrics, write_metrics
from clawloop.artifacts.stage import output_dir
from clawloop.artifacts.suites import eval_suites
from clawloop.config.params import Params
from clawloop.core.rollout_settings import rollout_settings
from clawloop.core.tasks.pool import id_sample, read_pool
from clawloop.core.trajectory import FRESH_SUITE
from clawloop.phases.evaluate.gate import gate_and_promote
from clawloop.phases.evaluate.heldout import evaluate_suites


def evaluate_iteration(params: Params, *, iteration: int, checkpoint: Path, out: Path, previous: Path | None = None,
                       pool: Path | None = None, fresh: Path | None = None,
                       suites: Path | None = None) -> IterationMetrics:
    """Evaluate `checkpoint` into `out` (trajectories, summary.json); gate it against the promoted policy
    of the previous iteration's dir `previous` (none at iteration 0) and write metrics.json, heldout.json and policy/
    beside `out`. `suites`: runs/suites.json, which the suites must still match."""
    t0 = time.perf_counter()
    # `at: ends` suites: iteration 0 here, the final policy in evaluate-final (clawloop.phases.evaluate.ends)
    rollout = eval_suites(params, suites, skip_ends=f"at iteration {iteration}" if iteration else None)
    if pool and params.eval.pool_sample:
        rollout.append(("pool", id_sample(read_pool(pool), params.eval.pool_sample), False))
    if fresh and params.eval.fresh:
        heldout = {t.id for _, tasks, held in rollout if held for t in tasks}
        rollout.append((FRESH_SUITE, [t for t in read_pool(fresh) if t.id not in heldout], False))
    ctx = rollout_settings(params)
    harness = ctx.harness_for(checkpoint)  # its playbook, if any
    model = ctx.load_policy(checkpoint, policy_id=f"iter-{iteration}")
    with output_dir(out) as tmp:
        results = evaluate_suites(params, ctx, rollout, policy=model, harness=harness, out_dir=tmp, iteration=iteration)
        wall = time.perf_counter() - t0
        write_metrics(tmp / "summary.json", results.detail(iteration, wall, getattr(model, "number_format", None)))
    return gate_and_promote(iteration, results.figures, results.verdicts, checkpoint=checkpoint, previous=previous,
                            it_dir=out.parent, gate_params=params.gate, wall_s=round(wall, 1), levels=results.levels,
                            ends=[s.name for s in params.eval.suites if s.at == "ends"])
