"""Stage `validate@N`: keep only sound tasks, then label them with the current policy.

    python -m stages.validate --iteration 1 --pool runs/iter-1/pool/pool.jsonl \
        --policy runs/iter-0/policy --out runs/iter-1/validated

Agent-free: the reference solution passes, a no-op fails, the verifier agrees with itself, no
near-duplicates, no overlap with the held-out suites. Agent-based: k rollouts of the current
policy label each kept task too_easy / learnable / frontier. Writes valid.jsonl, rejections.json,
probe.jsonl, the probe's trajectories (probe/) and the metrics file given by --metrics. With
`validation.hinted.k`, the policy also tries the probe's frontier tasks with a hint from their
reference solution (hinted/): training learns from the passes with the hint cut.
"""

from pathlib import Path

from clawloop.artifacts.stage import run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.phases.validate.validate import validate_iteration


def main(params: Params) -> None:
    ap = stage_parser(suites=True)
    ap.add_argument("--pool", type=Path, required=True)
    ap.add_argument("--policy", type=Path, required=True, help="the promoted policy, for the probe")
    ap.add_argument("--metrics", type=Path, help="default: <out>/../validation.json")
    validate_iteration(params, **vars(ap.parse_args()))


if __name__ == "__main__":
    run_stage(main)
