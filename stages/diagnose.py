"""Stage `diagnose@N`: DuckDB over the iteration's rollouts → the capability report.

    python -m stages.diagnose --iteration 1 --eval runs/iter-1/eval runs/iter-1/validated/probe \
        --pool runs/iter-1/validated/valid.jsonl \
        --previous runs/iter-0/diagnosis/diagnosis.json --out runs/iter-1/diagnosis

Writes diagnosis.json (read by the next synthesis), report.md and a pass-rate heatmap. The cells
and recommendations rest on held-in episodes only: the trained policy's fresh instances
(`<eval>/fresh`, eval.fresh) when the evaluate stage made them, else the pool sample and the probe
(the policy before this iteration's training). Held-out suites appear in the per-suite figures
and never steer synthesis or training.
"""

from pathlib import Path

from clawloop.artifacts.stage import output_dir, run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.core.trajectory import FRESH_SUITE, HELD_IN_SUITES
from clawloop.errors import ClawloopError
from clawloop.phases.diagnose.diagnose import diagnose, write_report


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--eval", type=Path, nargs="+", required=True,
                    help="rollout trajectories of this iteration (the evaluation, the probe)")
    ap.add_argument("--pool", type=Path, help="validated pool, for diversity figures")
    ap.add_argument("--previous", type=Path, help="previous iteration's diagnosis.json")
    args = ap.parse_args()
    if params.diagnosis.options.narrative:  # a knob that would otherwise do nothing here
        raise ClawloopError("params.yaml: diagnosis.options.narrative: the diagnose stage loads no policy, so it "
                            "writes no narrative; set it false (`clawloop diagnose --narrative-model DIR` writes one)")

    # A probe that rolled out nothing (no task kept) leaves no episode parts: nothing to read there.
    rollouts = [p for p in args.eval if not p.is_dir() or any(p.rglob("episodes*.parquet"))]
    for p in sorted(set(args.eval) - set(rollouts)):
        print(f"[diagnose] {p}: no episodes, skipped")
    fresh = any(p.is_dir() and any((p / FRESH_SUITE).rglob("episodes*.parquet")) for p in rollouts)
    evidence = (FRESH_SUITE,) if fresh else HELD_IN_SUITES
    report = diagnose(rollouts, previous=args.previous, pool=args.pool, iteration=args.iteration,
                      params=params.diagnosis.options, evidence_suites=evidence)
    with output_dir(args.out) as tmp:
        write_report(report, tmp)
    print(f"[diagnose] iteration {args.iteration}: {report.episodes} episodes, "
          f"pass rate {report.pass_rate:.3f}, {sum(c.episodes for c in report.cells)} held-in graded episodes "
          f"({', '.join(evidence)}) behind {len(report.recommendations)} recommendations")


if __name__ == "__main__":
    run_stage(main)
