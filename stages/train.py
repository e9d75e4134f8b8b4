"""Stage `train@N`: SFT and/or GRPO of the current policy on iteration N's validated tasks.

    python -m stages.train --iteration 1 --validated runs/iter-1/validated \
        --policy runs/iter-0/policy --self-rollouts runs/iter-0/eval --out runs/iter-1/checkpoint

SFT learns from reference trajectories (the tasks' solutions executed in the sandbox) and the
policy's own successful rollouts on held-in tasks (the probe's, and the last evaluation's pool
suite; never a held-out suite). GRPO trains on the tasks the probe labelled learnable.
"""

import argparse
from pathlib import Path

from clawloop.params import Params
from clawloop.stage import run_stage


def main(params: Params) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iteration", type=int, required=True)
    ap.add_argument("--validated", type=Path, required=True)
    ap.add_argument("--policy", type=Path, required=True)
    ap.add_argument("--self-rollouts", type=Path, help="previous evaluation dir (its pool suite is used)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--logs", type=Path, help="DVCLive dir (default: <out>/../train-log)")
    ap.add_argument("--metrics", type=Path, help="default: <out>/../train.json")
    args = ap.parse_args()

    from clawloop.io import write_json
    from clawloop.loop import rollout_settings
    from clawloop.tasks.pool import read_pool
    from clawloop.training.config import TrainParams
    from clawloop.training.run import train
    from clawloop.validation.probe import read_probe, select_by_label

    pool = read_pool(args.validated / "valid.jsonl")
    probe = args.validated / "probe.jsonl"
    tasks = select_by_label(pool, read_probe(probe), [*params.validation.train_labels, "unprobed"])
    rollouts = [d for d in (args.validated / "probe", args.self_rollouts and args.self_rollouts / "pool")
                if d and d.is_dir()]
    logs = args.logs or args.out.parent / "train-log"
    metrics = train(params.train.method, args.policy, tasks, rollouts, probe, args.out,
                    TrainParams.from_mapping(params.train.options(), where="params.yaml: train"),
                    logs=logs, harness_config=rollout_settings(params)[0], backend=params.sandbox.backend,
                    jobs=params.sandbox.jobs, keep_base_without_tasks=True, executor=params.executor)
    logs.mkdir(parents=True, exist_ok=True)  # a declared output, empty when nothing was trained
    write_json(args.metrics or args.out.parent / "train.json", metrics)
    grpo = (f", GRPO on {metrics['grpo_tasks']} learnable" + (" (skipped)" if not metrics["grpo_tasks"] else "")
            if "grpo_tasks" in metrics else "")
    print(f"[train] iteration {args.iteration}: {params.train.method}, {len(tasks)} tasks{grpo},"
          f" {metrics.get('steps', 0)} steps → {args.out}")


if __name__ == "__main__":
    run_stage(main)
