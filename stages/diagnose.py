"""Stage `diagnose@N`: DuckDB over the iteration's rollouts → its diagnosis (the capability report).

    python -m stages.diagnose --iteration 1 --eval runs/iter-1/eval runs/iter-1/validated/probe \
        --pool runs/iter-1/validated/valid.jsonl \
        --previous-diagnosis runs/iter-0/diagnosis/diagnosis.json --out runs/iter-1/diagnosis

Writes diagnosis.json (read by the next synthesis), diagnosis.md and a pass-rate heatmap. The cells
and recommendations rest on held-in episodes only: the trained policy's fresh instances
(`<eval>/fresh`, eval.fresh) when the evaluate stage made them, else the pool sample and the probe
(the policy before this iteration's training). Held-out suites appear in the per-suite figures
and never steer synthesis or training.
"""

from pathlib import Path

from clawloop.artifacts.stage import renamed_flag, run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.phases.diagnose.diagnose import diagnose_iteration


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--eval", type=Path, nargs="+", required=True, help="rollout dirs of this iteration (evaluation, probe)")
    ap.add_argument("--pool", type=Path, help="validated pool, for diversity figures")
    renamed_flag(ap, "--previous-diagnosis", "--previous", type=Path, help="the previous iteration's diagnosis.json")
    diagnose_iteration(params, **vars(ap.parse_args()))


if __name__ == "__main__":
    run_stage(main)
