"""Stage `transfer`: do the refined tasks carry the gain to a fresh model?

    python -m stages.transfer --base runs/iter-0/policy --first runs/iter-1/validated \
        --final runs/iter-3/validated --out runs/transfer

A fresh copy of the loop's base (`--base`, i.e. runs/iter-0/policy; or `transfer.base`, any
`model.base` value such as scratch-tiny for a smaller model) is trained with the same budget on
iteration 1's validated task set and on the final one, then both are evaluated on the held-out
suites; transfer.json gives per suite the final set's model against the first's: the paired
difference, its interval, the flips and the exact McNemar p.
The same task sets can come from another repository through the DVC remote (`dvc get`/`dvc import`
of runs/iter-N/validated), which is how a smaller model is trained on them elsewhere.
"""

from pathlib import Path

from clawloop.artifacts.stage import run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.transfer import transfer


def main(params: Params) -> None:
    ap = stage_parser(iteration=False, suites=True)
    ap.add_argument("--base", type=Path, required=True, help="the loop's base checkpoint (iteration 0)")
    ap.add_argument("--first", type=Path, required=True, help="iteration 1's validated dir")
    ap.add_argument("--final", type=Path, required=True, help="the final iteration's validated dir")
    transfer(params, **vars(ap.parse_args()))


if __name__ == "__main__":
    run_stage(main)
