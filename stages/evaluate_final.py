"""Stage `evaluate-final`: the final policy on the `at: ends` suites of `eval.suites` (benchmarks
rolled out at iteration 0 and here only, to keep the loop's budget), paired with iteration 0.

    python -m stages.evaluate_final --iteration 3 --final runs/iter-3 --base runs/iter-0 \
        --suites runs/suites.json --out runs/ends/final --metrics runs/ends/vs-base.json

--final is the last iteration's dir: its policy/ (what the gate kept) is rolled out, its
heldout.json says which iteration that policy is from. With no such suite exported it rolls out
nothing and loads no model (clawloop.phases.evaluate.ends).
"""

from pathlib import Path

from clawloop.artifacts.stage import run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.phases.evaluate.ends import evaluate_final


def main(params: Params) -> None:
    ap = stage_parser(suites=True)
    ap.add_argument("--final", type=Path, required=True, help="the last iteration's dir (policy/, heldout.json)")
    ap.add_argument("--base", type=Path, required=True, help="iteration 0's dir (heldout.json: its verdicts)")
    ap.add_argument("--metrics", type=Path, help="where the comparison goes (default: <out>/../vs-base.json)")
    evaluate_final(params, **vars(ap.parse_args()))


if __name__ == "__main__":
    run_stage(main)
