"""Stage `train@N`: SFT and/or GRPO of the current policy, and/or its playbook, on iteration N's tasks.

    python -m stages.train --iteration 1 --validated runs/iter-1/validated \
        --policy runs/iter-0/policy --self-rollouts runs/iter-0/eval \
        --report runs/iter-0/diagnosis/diagnosis.json --out runs/iter-1/checkpoint

SFT learns from reference trajectories (the tasks' solutions executed in the sandbox) and the
policy's own successful rollouts on held-in tasks (the probe's, and the last evaluation's pool
suite; never a held-out suite). GRPO trains on the tasks the probe labelled learnable.
`playbook` keeps the weights (the checkpoint is the policy, hard-linked) and evolves the
playbook from the report and the same held-in rollouts (clawloop.training.playbook);
`sft+playbook` does SFT, then the playbook. With `train.playbook.reflector: model` the policy
(the new checkpoint) reads its own held-in episodes and proposes the tips (clawloop.training.reflect);
then harness edits are tried on a development split of the validated pool and kept after a paired
win there (clawloop.training.harness_search). The playbook, with what the harness learned, goes
into the checkpoint directory (`playbook.json`, applied by every later rollout of it) and into the
versioned artifact `<out>/../playbook/` (playbook.json, playbook.md, reflection.json, harness.json;
empty for the weight-only methods).
"""

import functools
from pathlib import Path

from clawloop.params import Params
from clawloop.stage import run_stage, stage_parser


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

    from clawloop.io import hand_over, write_json
    from clawloop.loop import loop_context
    from clawloop.paired import outcomes_of
    from clawloop.tasks.pool import read_pool
    from clawloop.training.guards import BudgetLimits
    from clawloop.training.playbook import evolve_checkpoint, write_artifact
    from clawloop.training.run import describe, train
    from clawloop.validation.probe import read_probe, select_by_label

    method = params.train.method
    weights = {"playbook": None, "sft+playbook": "sft"}.get(method, method)
    options = params.train.options()
    pool = read_pool(args.validated / "valid.jsonl")
    probe = args.validated / "probe.jsonl"
    labels = [*params.validation.train_labels, "unprobed"]  # the one owner of which tasks train
    tasks = select_by_label(pool, read_probe(probe), labels)
    rollouts = [d for d in (args.validated / "probe", args.self_rollouts and args.self_rollouts / "pool")
                if d and d.is_dir()]
    logs = args.logs or args.out.parent / "train-log"
    ctx = loop_context(params)
    harness = ctx.harness  # the plain prompt: the weights never see a playbook
    if weights is not None:
        metrics = train(weights, args.policy, tasks, rollouts, probe, args.out, options, logs=logs,
                        harness_config=harness, backend=ctx.backend, jobs=ctx.jobs, sandbox_config=ctx.sandbox_config,
                        keep_base_without_tasks=True, executor=params.executor, sft_labels=labels)
        metrics["method"] = method
    else:  # weights frozen: the checkpoint is the policy (hard links), its playbook replaced below
        hand_over(args.policy, args.out)
        metrics = {"method": method, "steps": 0}
    @functools.cache
    def policy():  # loaded once, only when the reflector or the harness search needs it
        return ctx.load_policy(args.out, policy_id=f"iter-{args.iteration}-train")

    def generate(messages):  # the reflector: the policy itself, greedy, its own reply budget
        sampling = ctx.sampling.model_copy(update={"temperature": 0.0,
                                                   "max_new_tokens": options.playbook.reflection.max_new_tokens})
        return policy().generate([messages], sampling, tools=None)[0].text

    def run_dev(dev_tasks, dev_harness):  # the held-in development split, at the evaluation's sampling
        episodes = ctx.rollouts(dev_tasks, policy(), harness=dev_harness, suite="dev", iteration=args.iteration,
                                progress=False)
        return outcomes_of(episodes, "dev")

    r = params.rollout
    evo = evolve_checkpoint(method, policy=args.policy, report=args.report, out=args.out, iteration=args.iteration,
                            rollouts=rollouts, params=options.playbook, harness_config=harness,
                            generate=generate, run_dev=run_dev, pool=pool,
                            limits=BudgetLimits(max_turns=r.max_turns, command_timeout_s=r.command_timeout_s,
                                                max_new_tokens=r.max_new_tokens))
    metrics.update(evo.figures)
    write_artifact(args.playbook or args.out.parent / "playbook", evo.playbook, harness, previous=evo.previous,
                   reflection=evo.reflection, search=evo.search)
    if evo.search is not None:
        print(f"[train] {evo.search.describe()}")
    logs.mkdir(parents=True, exist_ok=True)  # a declared output, empty when nothing was trained
    write_json(args.metrics or args.out.parent / "train.json", metrics)
    print(f"[train] iteration {args.iteration}: {describe(method, len(tasks), metrics)} → {args.out}")

if __name__ == "__main__":
    run_stage(main)
