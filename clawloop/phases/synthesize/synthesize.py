"""The synthesize stage of iteration N: the pool (clawloop.phases.synthesize.pool: the budget split, the
grounded routines, the procedural refill) and its fresh instances (clawloop.phases.synthesize.fresh)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from clawloop.artifacts.diagnosis import load_diagnosis
from clawloop.artifacts.stage import output_dir
from clawloop.config.params import Params
from clawloop.core.io import write_json
from clawloop.core.rollout_settings import rollout_settings
from clawloop.core.tasks.pool import write_pool
from clawloop.errors import ClawloopError
from clawloop.phases.synthesize.fresh import FRESH_TASKS, fresh_tasks
from clawloop.phases.synthesize.paraphrase import paraphrase
from clawloop.phases.synthesize.pool import Pool, build_pool
from clawloop.policy.types import Policy


def synthesize_iteration(params: Params, *, iteration: int, out: Path, diagnosis: Path | None = None,
                         policy: Path | None = None) -> Pool:
    """Iteration `iteration`'s pool steered by the previous iteration's diagnosis.json `diagnosis` into `out`:
    pool.jsonl, manifest.json and fresh.jsonl (`eval.fresh` new instances per skill at its pool's
    top level, which the evaluate stage rolls the trained policy out on). `policy`: the promoted
    policy, which the grounded routines run."""
    def current_policy(routine: str) -> tuple[Policy, str]:
        if policy is None:
            raise ClawloopError(f"--policy: routine {routine} needs the current policy")
        ctx = rollout_settings(params)
        return ctx.load_policy(policy, policy_id=policy.name), ctx.backend

    last = load_diagnosis(diagnosis) if diagnosis else None
    pool = build_pool(params.synthesis, iteration, last, str(diagnosis) if diagnosis else None, current_policy)
    if params.synthesis.paraphrase.share > 0:
        pool = reword(pool, current_policy("paraphrase")[0], params, iteration)
    fresh = fresh_tasks(pool.tasks, params.eval.fresh, seed=params.synthesis.seed, iteration=iteration,
                        forms=params.synthesis.forms())
    with output_dir(out) as tmp:
        write_pool(tmp / "pool.jsonl", pool.tasks)
        write_pool(tmp / FRESH_TASKS, fresh)
        write_json(tmp / "manifest.json", pool.manifest())
    print(f"[synthesize] {pool.summary()}; {len(fresh)} fresh instances for the evaluation")
    return pool


def reword(pool: Pool, policy: Policy, params: Params, iteration: int) -> Pool:
    """`pool` with a share of its procedural tasks reworded by `policy` (synthesis.paraphrase): the
    grounded routines' tasks are already in the policy's words."""
    procedural = [i for i, t in enumerate(pool.tasks) if t.provenance.routine == "procedural"]
    done, stats = paraphrase([pool.tasks[i] for i in procedural], policy, params.synthesis.paraphrase,
                             seed=params.synthesis.seed + iteration)
    tasks = list(pool.tasks)
    for i, t in zip(procedural, done, strict=True):
        tasks[i] = t
    print(f"[synthesize] the policy reworded {stats.kept} of {stats.offered} requests offered "
          f"({stats.samples} samples; refused: {dict(stats.refused.most_common())})")
    return dataclasses.replace(pool, tasks=tasks, paraphrase=stats.to_json())
