"""Stage `diagnose@N`: DuckDB over the iteration's rollouts → the capability report.

    python -m stages.diagnose --iteration 1 --eval runs/iter-1/eval \
        --pool runs/iter-1/validated/valid.jsonl \
        --previous runs/iter-0/diagnosis/diagnosis.json --out runs/iter-1/diagnosis

Writes diagnosis.json (read by the next synthesis), report.md and a pass-rate heatmap.
"""

from pathlib import Path

from clawloop.diagnosis.diagnose import diagnose, write_report
from clawloop.params import Params
from clawloop.stage import output_dir, run_stage, stage_parser


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--eval", type=Path, required=True, help="rollout trajectories of this iteration")
    ap.add_argument("--pool", type=Path, help="validated pool, for diversity figures")
    ap.add_argument("--previous", type=Path, help="previous iteration's diagnosis.json")
    args = ap.parse_args()

    report = diagnose([args.eval], previous=args.previous, pool=args.pool, iteration=args.iteration,
                      params=params.diagnosis.options)
    with output_dir(args.out) as tmp:
        write_report(report, tmp)
    print(f"[diagnose] iteration {args.iteration}: {report.episodes} episodes, "
          f"pass rate {report.pass_rate:.3f}, {len(report.recommendations)} recommendations")


if __name__ == "__main__":
    run_stage(main)
