"""Stage `evaluate@N`: roll out the new checkpoint on the held-out suites, gate its promotion.

    python -m stages.evaluate --iteration 1 --policy runs/iter-1/checkpoint \
        --previous runs/iter-0 --pool runs/iter-1/validated/valid.jsonl \
        --fresh runs/iter-1/pool/fresh.jsonl --out runs/iter-1/eval

Rolls out every suite of `eval.suites` (held-out), a sample of the validated pool, and the
synthesize stage's fresh instances (--fresh: new draws of each skill at its pool's top level,
held-in suite `fresh`, the evidence the next synthesis is steered by), writing trajectories
under --out. The held-out gate then decides whether the checkpoint becomes the policy the next
iteration starts from (`<out>/../policy`), or the best policy so far stays. The gate compares the checkpoint with that policy task by task
(clawloop.core.paired: an exact sign test on the held-out tasks whose verdict changed, `gate.alpha`).
The headline figures go to `<out>/../metrics.json` (what `dvc metrics show` reads), the per-task
held-out verdicts and paired comparisons to `<out>/../heldout.json` (the next gate reads it),
every suite's figures to `<out>/summary.json`. Without --previous (the bootstrap policy,
iteration 0) there is nothing to gate.
"""

import time
from pathlib import Path

from clawloop.artifacts.metrics import write_metrics
from clawloop.artifacts.stage import output_dir, run_stage, stage_parser
from clawloop.artifacts.suites import eval_suites
from clawloop.config.params import Params
from clawloop.core.rollout_settings import rollout_settings
from clawloop.core.tasks.pool import id_sample, read_pool
from clawloop.core.trajectory import FRESH_SUITE
from clawloop.phases.evaluate.gate import gate_and_promote
from clawloop.phases.evaluate.heldout import evaluate_suites


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--policy", type=Path, required=True, help="checkpoint to evaluate")
    ap.add_argument("--previous", type=Path, help="previous iteration dir (its metrics.json and policy/)")
    ap.add_argument("--pool", type=Path, help="validated pool: a sample is rolled out for the diagnosis")
    ap.add_argument("--fresh", type=Path, help="the synthesize stage's fresh.jsonl: new instances of the pool's "
                    "top levels, the diagnosis's evidence")
    ap.add_argument("--suites", type=Path, help="runs/suites.json: the suites must still match it")
    args = ap.parse_args()

    t0 = time.perf_counter()
    suites = eval_suites(params, args.suites)
    if args.pool and params.eval.pool_sample:
        suites.append(("pool", id_sample(read_pool(args.pool), params.eval.pool_sample), False))
    if args.fresh and params.eval.fresh:
        heldout = {t.id for _, tasks, held in suites if held for t in tasks}
        suites.append((FRESH_SUITE, [t for t in read_pool(args.fresh) if t.id not in heldout], False))
    ctx = rollout_settings(params)
    harness = ctx.harness_for(args.policy)  # its playbook, if any
    policy = ctx.load_policy(args.policy, policy_id=f"iter-{args.iteration}")
    with output_dir(args.out) as tmp:
        results = evaluate_suites(params, ctx, suites, policy=policy, harness=harness, out_dir=tmp,
                                  iteration=args.iteration)
        wall = time.perf_counter() - t0
        write_metrics(tmp / "summary.json", results.detail(args.iteration, wall))
    gate_and_promote(args.iteration, results.figures, results.verdicts, checkpoint=args.policy, previous=args.previous,
           it_dir=args.out.parent, gate_params=params.gate, wall_s=round(wall, 1), levels=results.levels)


if __name__ == "__main__":
    run_stage(main)
