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

from clawloop.artifacts.stage import output_dir, run_stage, stage_parser
from clawloop.artifacts.suites import eval_suites
from clawloop.bootstrap.base import make_base
from clawloop.config.params import Params
from clawloop.core.io import write_json
from clawloop.core.rollout_settings import rollout_settings
from clawloop.core.tasks.pool import read_pool
from clawloop.phases.evaluate.heldout import heldout_verdicts, paired_rows
from clawloop.phases.train.run import EpisodeSetup, TrainJob, train


def main(params: Params) -> None:
    ap = stage_parser(iteration=False)
    ap.add_argument("--base", type=Path, required=True, help="the loop's base checkpoint (iteration 0)")
    ap.add_argument("--first", type=Path, required=True, help="iteration 1's validated dir")
    ap.add_argument("--final", type=Path, required=True, help="the final iteration's validated dir")
    ap.add_argument("--suites", type=Path, help="runs/suites.json: the suites must still match it")
    args = ap.parse_args()

    tr = params.transfer
    base_name = tr.base or params.model.base
    result: dict = {"base": base_name, "pass_at_1": {}, "tasks": {}}
    verdicts = {}
    if not tr.enabled:
        print("[transfer] disabled (transfer.enabled: false)")
    heldout = [(name, tasks) for name, tasks, held in eval_suites(params, args.suites) if held]
    ctx = rollout_settings(params)
    with output_dir(args.out / "models") as tmp:
        fresh = args.base
        if tr.enabled and tr.base is not None:
            fresh = tmp / "fresh"
            make_base(tr.base, fresh, seed=params.model.seed, bootstrap=params.model.bootstrap)
        for name, validated in (("first", args.first), ("final", args.final)) if tr.enabled else ():
            tasks = read_pool(validated / "valid.jsonl")
            train(TrainJob("sft", fresh, tasks, tmp / name), tr.train, EpisodeSetup.of_loop(ctx, params.executor))
            policy = ctx.load_policy(tmp / name, policy_id=f"transfer-{name}")
            verdicts[name], result["pass_at_1"][name] = heldout_verdicts(ctx, policy, heldout)
            result["tasks"][name] = len(tasks)
            print(f"[transfer] fresh {base_name} trained on {name} ({len(tasks)} tasks): "
                  f"held-out pass@1 {result['pass_at_1'][name]:.3f}")
    if tr.enabled:
        result["gain"] = result["pass_at_1"]["final"] - result["pass_at_1"]["first"]
        result["paired"] = paired_rows(verdicts["first"], verdicts["final"])  # before: first, after: final
    write_json(args.out / "transfer.json", result)


if __name__ == "__main__":
    run_stage(main)
