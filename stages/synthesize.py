"""Stage `synthesize@N`: iteration N's task pool, steered by the previous iteration's diagnosis.

    python -m stages.synthesize --iteration 1 --diagnosis runs/iter-0/diagnosis/diagnosis.json \
        --policy runs/iter-0/policy --out runs/iter-1/pool

The budget split, the grounded routines (run with the current policy on rollout.backend) and the
procedural refill are clawloop.phases.synthesize.pool's. Writes pool.jsonl, manifest.json and fresh.jsonl:
`eval.fresh` new instances per skill at its pool's top level, which the evaluate stage rolls the
trained policy out on (clawloop.phases.synthesize.fresh; drawn here, where the generators are).
"""

from pathlib import Path

from clawloop.artifacts.stage import renamed_flag, run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.phases.synthesize.synthesize import synthesize_iteration


def main(params: Params) -> None:
    ap = stage_parser()
    renamed_flag(ap, "--diagnosis", "--report", type=Path, help="the previous iteration's diagnosis.json")
    ap.add_argument("--policy", type=Path, help="the promoted policy (the grounded routines run it)")
    synthesize_iteration(params, **vars(ap.parse_args()))


if __name__ == "__main__":
    run_stage(main)
