"""Stage `evaluate@N`: roll out the new checkpoint on the held-out suites, gate its promotion.

    python -m stages.evaluate --iteration 1 --policy runs/iter-1/checkpoint \
        --previous runs/iter-0 --pool runs/iter-1/validated/valid.jsonl --out runs/iter-1/eval

Rolls out every suite of `eval.suites` (held-out) and a sample of the validated pool (held-in,
for the diagnosis), writing trajectories under --out. The held-out gate then decides whether
the checkpoint becomes the policy the next iteration starts from (`<out>/../policy`), or the
best policy so far stays. The headline figures go to `<out>/../metrics.json` (what `dvc metrics
show` reads), every suite's figures to `<out>/summary.json`. Without --previous (the bootstrap
policy, iteration 0) there is nothing to gate.
"""

import time
from pathlib import Path

from clawloop.params import Params
from clawloop.stage import output_dir, run_stage, stage_parser


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--policy", type=Path, required=True, help="checkpoint to evaluate")
    ap.add_argument("--previous", type=Path, help="previous iteration dir (its metrics.json and policy/)")
    ap.add_argument("--pool", type=Path, help="validated pool: a sample is rolled out for the diagnosis")
    ap.add_argument("--suites", type=Path, help="runs/suites.json: the suites must still match it")
    args = ap.parse_args()
    it_dir = args.out.parent

    from clawloop import loop
    from clawloop.suite_manifest import eval_suites
    from clawloop.tasks.pool import read_pool

    t0 = time.perf_counter()
    suites = eval_suites(params, args.suites)
    if args.pool and params.eval.pool_sample:
        pool = sorted(read_pool(args.pool), key=lambda t: t.id)[: params.eval.pool_sample]
        suites.append(("pool", pool, False))
    ctx = loop.loop_context(params)
    harness = ctx.harness_for(args.policy)  # its playbook, if any
    policy = ctx.load_policy(args.policy, policy_id=f"iter-{args.iteration}")
    figures = {}
    episodes = 0
    with output_dir(args.out) as tmp:
        for name, tasks, heldout in suites:
            summaries = ctx.rollouts(tasks, policy, k=params.eval.samples, harness=harness, out_dir=tmp / name,
                                     iteration=args.iteration, suite=name, progress=True)
            figures[name] = loop.suite_metrics(summaries, heldout=heldout)
            episodes += len(summaries)
            print(f"[evaluate] {name}: pass@1 {figures[name].pass_at_1:.3f} over {figures[name].tasks} tasks")
        wall = time.perf_counter() - t0
        loop.write_metrics(tmp / "summary.json", loop.EvalDetail(
            iteration=args.iteration, suites=figures, wall_s=round(wall, 1),
            episodes_per_s=round(episodes / wall, 3) if wall else 0.0))

    rate = loop.heldout_rate(figures)
    previous = loop.read_metrics(args.previous / "metrics.json") if args.previous else None
    promoted, best = loop.gate(rate, previous, params.gate.tolerance, params.gate.enabled)
    if previous is not None:
        loop.hand_over(args.policy if promoted else args.previous / "policy", it_dir / "policy")
    policy_from = args.iteration if promoted or previous is None else previous.policy_from
    loop.write_metrics(it_dir / "metrics.json", loop.headline(
        args.iteration, figures, promoted=promoted, best=best, policy_from=policy_from, wall_s=round(wall, 1)))
    print(f"[evaluate] iteration {args.iteration}: held-out pass@1 {rate:.3f}, "
          f"{'promoted' if promoted else 'not promoted (best so far stays)'}")


if __name__ == "__main__":
    run_stage(main)
