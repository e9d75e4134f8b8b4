"""Stage `synthesize@N`: iteration N's task pool, steered by the previous capability report.

    python -m stages.synthesize --iteration 1 --report runs/iter-0/diagnosis/diagnosis.json \
        --policy runs/iter-0/policy --out runs/iter-1/pool

The budget split, the grounded routines (run with the current policy on rollout.backend) and the
procedural refill are clawloop.phases.synthesize.pool's. Writes pool.jsonl, manifest.json and fresh.jsonl:
`eval.fresh` new instances per skill at its pool's top level, which the evaluate stage rolls the
trained policy out on (clawloop.phases.synthesize.fresh; drawn here, where the generators are).
"""

from pathlib import Path

from clawloop.artifacts.diagnosis import load_report
from clawloop.artifacts.stage import output_dir, run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.core.io import write_json
from clawloop.core.rollout_settings import rollout_settings
from clawloop.core.tasks.pool import write_pool
from clawloop.errors import ClawloopError
from clawloop.phases.synthesize.fresh import FRESH_TASKS, fresh_tasks
from clawloop.phases.synthesize.pool import build_pool
from clawloop.policy.types import Policy


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--report", type=Path, help="previous iteration's diagnosis.json")
    ap.add_argument("--policy", type=Path, help="current policy (the grounded routines)")
    args = ap.parse_args()

    def current_policy(routine: str) -> tuple[Policy, str]:
        if args.policy is None:
            raise ClawloopError(f"--policy: routine {routine} needs the current policy")
        ctx = rollout_settings(params)
        return ctx.load_policy(args.policy, policy_id=args.policy.name), ctx.backend

    last = load_report(args.report) if args.report else None
    pool = build_pool(params.synthesis, args.iteration, last, str(args.report) if args.report else None,
                      current_policy)
    fresh = fresh_tasks(pool.tasks, params.eval.fresh, seed=params.synthesis.seed, iteration=args.iteration,
                        forms=params.synthesis.forms())
    with output_dir(args.out) as tmp:
        write_pool(tmp / "pool.jsonl", pool.tasks)
        write_pool(tmp / FRESH_TASKS, fresh)
        write_json(tmp / "manifest.json", pool.manifest())
    print(f"[synthesize] {pool.summary()}; {len(fresh)} fresh instances for the evaluation")


if __name__ == "__main__":
    run_stage(main)
