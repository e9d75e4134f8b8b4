"""Stage `train@N`: SFT and/or GRPO of the current policy, and/or its playbook, on iteration N's tasks.

    python -m stages.train --iteration 1 --validated runs/iter-1/validated \
        --policy runs/iter-0/policy --self-rollouts runs/iter-0/eval \
        --report runs/iter-0/diagnosis/diagnosis.json --out runs/iter-1/checkpoint

What each train.method does, reads and writes: clawloop/phases/train/__init__.py.
"""

from pathlib import Path

from clawloop.artifacts.probe import read_probe, select_by_label
from clawloop.artifacts.stage import run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.core.io import write_json
from clawloop.core.rollout_settings import rollout_settings
from clawloop.core.tasks.pool import read_pool
from clawloop.phases.train.guards import BudgetLimits
from clawloop.phases.train.playbook import OwnPolicy, PlaybookStep, evolve_checkpoint
from clawloop.phases.train.run import EpisodeSetup, TrainJob, describe, held_in_rollouts, train_weights


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--validated", type=Path, required=True)
    ap.add_argument("--policy", type=Path, required=True)
    ap.add_argument("--self-rollouts", type=Path, help="previous evaluation dir (its pool suite is used)")
    ap.add_argument("--report", type=Path, help="previous iteration's diagnosis.json (playbook methods)")
    ap.add_argument("--playbook", type=Path, help="playbook artifact dir (default: <out>/../playbook)")
    ap.add_argument("--logs", type=Path, help="DVCLive dir (default: <out>/../train-log)")
    ap.add_argument("--metrics", type=Path, help="default: <out>/../train.json")
    args = ap.parse_args()

    method, options = params.train.method, params.train.options()
    pool = read_pool(args.validated / "valid.jsonl")
    probe = args.validated / "probe.jsonl"
    labels = [*params.validation.train_labels, "unprobed"]  # the one owner of which tasks train
    tasks = select_by_label(pool, read_probe(probe), labels)
    rollouts = held_in_rollouts(args.validated, args.self_rollouts)
    hinted = [d for d in (args.validated / "hinted",) if d.is_dir()]  # SFT only: the playbook reads no hint
    logs = args.logs or args.out.parent / "train-log"
    ctx = rollout_settings(params)
    job = TrainJob(method, args.policy, tasks, args.out, trajectories=[*rollouts, *hinted], probe=probe, logs=logs,
                   sft_labels=labels, keep_base_without_tasks=True)
    metrics = train_weights(job, options, EpisodeSetup.of_loop(ctx, params.executor))
    own = OwnPolicy(ctx, args.out, args.iteration, options.playbook.reflection.max_new_tokens)
    step = PlaybookStep(args.iteration, args.policy, args.out, args.report, rollouts, pool,
                        BudgetLimits.of_rollout(params.rollout))
    evo = evolve_checkpoint(method, step, options.playbook, ctx.harness, generate=own.generate, run_dev=own.run_dev)
    metrics.update(evo.figures)
    evo.write_artifact(args.playbook or args.out.parent / "playbook", ctx.harness)
    if evo.search is not None:
        print(f"[train] {evo.search.describe()}")
    logs.mkdir(parents=True, exist_ok=True)  # a declared output, empty when nothing was trained
    write_json(args.metrics or args.out.parent / "train.json", metrics)
    print(f"[train] iteration {args.iteration}: {describe(method, len(tasks), metrics)} → {args.out}")


if __name__ == "__main__":
    run_stage(main)
