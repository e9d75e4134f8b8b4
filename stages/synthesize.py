"""Stage `synthesize@N`: iteration N's task pool, steered by the previous capability report.

    python -m stages.synthesize --iteration 1 --report runs/iter-0/diagnosis/diagnosis.json \
        --policy runs/iter-0/policy --out runs/iter-1/pool

The budget split, the grounded routines (run with the current policy on rollout.backend) and the
procedural refill are clawloop.phases.synthesize.pool's. Writes pool.jsonl, manifest.json and fresh.jsonl:
`eval.fresh` new instances per skill at its pool's top level, which the evaluate stage rolls the
trained policy out on (clawloop.phases.synthesize.fresh; drawn here, where the generators are).
"""

from pathlib import Path

from clawloop.artifacts.stage import run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.phases.synthesize.synthesize import synthesize_iteration


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--report", type=Path, help="previous iteration's diagnosis.json")
    ap.add_argument("--policy", type=Path, help="current policy (the grounded routines)")
    synthesize_iteration(params, **vars(ap.parse_args()))


if __name__ == "__main__":
    run_stage(main)
