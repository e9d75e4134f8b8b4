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
level: rates, difference, interval, p; clawloop.phases.evaluate.heldout.vs_base) as a DVC metrics file.
"""

import time
from pathlib import Path

from clawloop.artifacts.metrics import SampledEval, read_sampled, suite_metrics, write_metrics
from clawloop.artifacts.stage import output_dir, run_stage, stage_parser
from clawloop.artifacts.suites import eval_suites
from clawloop.config.params import Params
from clawloop.core.io import write_json
from clawloop.core.paired import levels_of, outcomes_of
from clawloop.core.rollout_settings import rollout_settings
from clawloop.phases.evaluate.heldout import SAMPLED_OUTCOMES, vs_base


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--policy", type=Path, required=True, help="the policy to sample")
    ap.add_argument("--suites", type=Path, help="runs/suites.json: the suites must still match it")
    ap.add_argument("--base", type=Path, help="the base's sampled evaluation: compare against it")
    ap.add_argument("--metrics", type=Path, help="where the comparison goes (default: <out>/../vs-base.json)")
    args = ap.parse_args()

    cfg = params.eval.sampled
    base = read_sampled(args.base / SAMPLED_OUTCOMES) if args.base else None  # a bad one fails before any rollout
    t0 = time.perf_counter()
    ctx = rollout_settings(params)
    suites = eval_suites(params, args.suites, only=cfg.suites)
    policy = ctx.load_policy(args.policy, policy_id=f"iter-{args.iteration}") if suites else None
    harness = ctx.harness_for(args.policy)  # its playbook, if any
    outcomes, levels, figures = {}, {}, {}
    with output_dir(args.out) as tmp:
        for name, tasks, _ in suites:
            summaries = ctx.rollouts(tasks, policy, k=cfg.k, sampling=ctx.sampling_at(cfg.temperature),
                                     harness=harness, out_dir=tmp / name,
                                     iteration=args.iteration, suite=name, progress=True)
            outcomes |= outcomes_of(summaries, name)
            levels |= levels_of(summaries, name)
            figures[name] = m = suite_metrics(summaries, heldout=True)
            print(f"[evaluate-sampled] {name}: {m.passed}/{m.episodes} samples passed "
                  f"({len(tasks)} tasks × {cfg.k} at T {cfg.temperature})")
        result = SampledEval(k=cfg.k, temperature=cfg.temperature, suites=figures, outcomes=outcomes, levels=levels)
        write_metrics(tmp / SAMPLED_OUTCOMES, result)
    if base is not None:
        comparison = vs_base(base, result)
        write_json(args.metrics or args.out.parent / "vs-base.json", comparison)
        for name, row in comparison.items():
            if isinstance(row, dict):
                print(f"[evaluate-sampled] {name}: base {row['base']:.3f} → final {row['final']:.3f} "
                      f"({row['diff']:+.3f} [{row['diff_low']:+.3f}, {row['diff_high']:+.3f}]), "
                      f"paired permutation p = {row['p_permutation']:.3g}")
    print(f"[evaluate-sampled] done in {time.perf_counter() - t0:.0f} s → {args.out}")


if __name__ == "__main__":
    run_stage(main)
