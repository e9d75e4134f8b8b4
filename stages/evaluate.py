"""Stage `evaluate@N`: roll out the new checkpoint on the held-out suites, gate its promotion.

    python -m stages.evaluate --iteration 1 --checkpoint runs/iter-1/checkpoint \
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

from pathlib import Path

from clawloop.artifacts.stage import renamed_flag, run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.phases.evaluate.evaluate import evaluate_iteration


def main(params: Params) -> None:
    ap = stage_parser(suites=True)
    renamed_flag(ap, "--checkpoint", "--policy", required=True, type=Path, help="the checkpoint to evaluate")
    ap.add_argument("--previous", type=Path, help="the previous iteration's dir (its metrics.json and policy/)")
    ap.add_argument("--pool", type=Path, help="validated pool: a sample is rolled out for the diagnosis")
    ap.add_argument("--fresh", type=Path, help="the synthesize stage's fresh.jsonl (new instances of the pool's top levels)")
    evaluate_iteration(params, **vars(ap.parse_args()))


if __name__ == "__main__":
    run_stage(main)
