"""Stage `train@N`: SFT and/or GRPO of the current policy, and/or its playbook, on iteration N's tasks.

    python -m stages.train --iteration 1 --validated runs/iter-1/validated \
        --policy runs/iter-0/policy --self-rollouts runs/iter-0/eval \
        --diagnosis runs/iter-0/diagnosis/diagnosis.json --out runs/iter-1/checkpoint

What each train.method does, reads and writes: clawloop/phases/train/__init__.py.
"""

from pathlib import Path

from clawloop.artifacts.stage import renamed_flag, run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.phases.train.train import train_iteration


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--validated", type=Path, required=True)
    ap.add_argument("--policy", type=Path, required=True, help="the promoted policy training starts from")
    ap.add_argument("--self-rollouts", type=Path, help="previous evaluation dir (its pool suite is used)")
    renamed_flag(ap, "--diagnosis", "--report", type=Path, help="the previous iteration's diagnosis.json (playbook methods)")
    ap.add_argument("--playbook", type=Path, help="playbook artifact dir (default: <out>/../playbook)")
    ap.add_argument("--logs", type=Path, help="DVCLive dir (default: <out>/../train-log)")
    ap.add_argument("--metrics", type=Path, help="default: <out>/../train.json")
    train_iteration(params, **vars(ap.parse_args()))


if __name__ == "__main__":
    run_stage(main)
