"""Stages `evaluate-sampled-base` and `evaluate-sampled-final`: the base and the final policy
sampled `eval.sampled.k` times per task at `eval.sampled.temperature`, on `eval.sampled.suites`.

    python -m stages.evaluate_sampled --iteration 0 --policy runs/iter-0/policy \
        --suites runs/suites.json --out runs/sampled/base
    python -m stages.evaluate_sampled --iteration 3 --policy runs/iter-3/policy \
        --suites runs/suites.json --base runs/sampled/base --out runs/sampled/final \
        --metrics runs/sampled/vs-base.json

One greedy sample per task on ~100 tasks cannot see a 5-10 point change; k samples give each task
a pass rate, and a paired permutation test on those rates can. The base's stage depends on the
base policy, the suites and the params only, so DVC's run cache computes it once per base, not once
per run or experiment. With --base the final's stage writes the paired comparison (per suite and
level: rates, difference, interval, p; clawloop.phases.evaluate.sampled.vs_base) as a DVC metrics file.
"""

from pathlib import Path

from clawloop.artifacts.stage import run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.phases.evaluate.sampled import evaluate_sampled


def main(params: Params) -> None:
    ap = stage_parser(suites=True)
    ap.add_argument("--policy", type=Path, required=True, help="the policy to sample")
    ap.add_argument("--base", type=Path, help="the base's sampled evaluation: compare against it")
    ap.add_argument("--metrics", type=Path, help="where the comparison goes (default: <out>/../vs-base.json)")
    evaluate_sampled(params, **vars(ap.parse_args()))


if __name__ == "__main__":
    run_stage(main)
