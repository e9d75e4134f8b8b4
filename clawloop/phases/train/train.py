"""The train stage of iteration N: SFT and/or GRPO of the current policy on the iteration's probed
tasks, then the playbook step of the playbook methods (what each train.method does, reads and
writes: clawloop/phases/train/__init__.py)."""

from __future__ import annotations

from pathlib import Path

from clawloop.artifacts import IterDir
from clawloop.artifacts.probe import read_probe, select_by_label
from clawloop.config.params import Params
from clawloop.core.agent.harness import tools_for
from clawloop.core.io import write_json
from clawloop.core.rollout_settings import rollout_settings
from clawloop.core.tasks.pool import read_pool
from clawloop.phases.train import drift
from clawloop.phases.train.guards import BudgetLimits
from clawloop.phases.train.jobs import EpisodeSetup, TrainJob, describe, held_in_rollouts, train_weights
from clawloop.phases.train.playbook import OwnPolicy, PlaybookStep, evolve_checkpoint


def train_iteration(params: Params, *, iteration: int, validated: Path, policy: Path, out: Path,
                    self_rollouts: Path | None = None, diagnosis: Path | None = None, playbook: Path | None = None,
                    logs: Path | None = None, metrics: Path | None = None) -> dict:
    """Train the policy at `policy` on `validated`'s tasks into checkpoint `out`; the playbook, the
    training log and train.json go beside it in the iteration dir unless given. Returns train.json."""
    it = IterDir(out.parent)
    method, options = params.train.method, params.train.options().at_iteration(iteration)
    pool = read_pool(validated / "valid.jsonl")
    probe = validated / "probe.jsonl"
    labels = [*params.validation.train_labels, "unprobed"]  # the one owner of which tasks train
    tasks = select_by_label(pool, read_probe(probe), labels)
    rollouts = held_in_rollouts(validated, self_rollouts)
    hinted = [d for d in (validated / "hinted",) if d.is_dir()]  # SFT only: the playbook reads no hint
    logs = logs or it.train_log
    ctx = rollout_settings(params)
    job = TrainJob(method, policy, tasks, out, trajectories=[*rollouts, *hinted], probe=probe, logs=logs,
                   sft_labels=labels, keep_base_without_tasks=True)
    figures = train_weights(job, options, EpisodeSetup.of_loop(ctx, params.executor))
    # how far the weights moved from the policy they started at, on what they trained on (#76)
    figures.update(drift.after_training(params.train.drift, policy, out, figures, tools=tools_for(ctx.harness),
                                        max_length=options.sft.max_length))
    own = OwnPolicy(ctx, out, iteration, options.playbook.reflection.max_new_tokens)
    step = PlaybookStep(iteration, policy, out, diagnosis, rollouts, pool, BudgetLimits.of_rollout(params.rollout))
    evo = evolve_checkpoint(method, step, options.playbook, ctx.harness, generate=own.generate, run_dev=own.run_dev)
    figures.update(evo.figures)
    evo.write_artifact(playbook or it.playbook, ctx.harness)
    if evo.search is not None:
        print(f"[train] {evo.search.describe()}")
    logs.mkdir(parents=True, exist_ok=True)  # a declared output, empty when nothing was trained
    write_json(metrics or it.train_json, figures)
    print(f"[train] iteration {iteration}: {describe(method, len(tasks), figures)} → {out}")
    return figures
