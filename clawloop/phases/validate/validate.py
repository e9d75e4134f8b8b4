"""The validate stage's steps: the agent-free checks of a synthesized pool, the probe's labels,
the stage's figures (validation.json)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawloop.artifacts import IterDir
from clawloop.artifacts.probe import ProbeResult, summarize, write_probe
from clawloop.artifacts.stage import output_dir
from clawloop.artifacts.suites import heldout_tasks
from clawloop.core.io import write_json
from clawloop.core.progress import Progress
from clawloop.core.rollout_settings import rollout_settings
from clawloop.core.tasks.pool import id_sample, read_pool_lenient, write_pool
from clawloop.core.tasks.task import Task
from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool
from clawloop.phases.validate.probe import help_rollouts, probe_tasks

if TYPE_CHECKING:
    from clawloop.config.params import Params
    from clawloop.core.rollout_settings import RolloutSettings


def check_pool(params: Params, ctx: RolloutSettings, pool: Path, suites: Path | None) -> tuple[list[Task], dict[str, Any]]:
    """(kept, rejections) of the agent-free checks of the pool JSONL `pool` on the context's sandboxes:
    the reference solution passes, a no-op fails, the verifier agrees with itself, no
    near-duplicates, no overlap with the held-out suites (checked against the manifest `suites`)."""
    tasks, parse_errors = read_pool_lenient(pool)
    heldout = heldout_tasks(params, suites)
    with Progress("validate", total=len(tasks), unit="tasks") as bar:
        kept, rejections = validate_pool(
            tasks, ctx.backend, params.validation.jobs or 2 * ctx.jobs, heldout,
            AgentFreeParams(near_duplicate_threshold=params.validation.near_duplicate_threshold),
            parse_errors=parse_errors, on_done=bar.advance, executor=params.executor,
            heldout_instances=heldout_tasks(params, suites, overlap="same_task"))
    print(f"[validate] agent-free: kept {len(kept)} of {rejections['input']} "
          f"({rejections['tasks_per_s']:.1f} tasks/s); rejected {rejections['rejected']}")
    return kept, rejections


def unprobed(kept: Sequence[Task], probed: Sequence[ProbeResult]) -> list[ProbeResult]:
    """A row labelled `unprobed` for each kept task the probe did not roll out."""
    seen = {r.task_id for r in probed}
    return [ProbeResult(task_id=t.id, k=0, passes=0, errors=0, label="unprobed") for t in kept if t.id not in seen]


def validation_summary(rejections: dict[str, Any], kept: Sequence[Task], probe: dict[str, Any]) -> dict[str, Any]:
    """validation.json: the pool's yield and rejections, and the probe's labels (`probe`)."""
    synthesized = rejections["input"]
    return {"synthesized": synthesized, "kept": len(kept),
            "yield": round(len(kept) / synthesized, 4) if synthesized else 0.0,
            "rejected": rejections["rejected"], "tasks_per_s": rejections["tasks_per_s"], "probe": probe}


def validate_iteration(params: Params, *, iteration: int, pool: Path, policy: Path, out: Path,
                       suites: Path | None = None, metrics: Path | None = None) -> dict[str, Any]:
    """Check `pool` agent-free, probe the kept tasks with the policy at `policy` (and, with
    `validation.hinted.k`, help its frontier tasks with a hint) into `out`: valid.jsonl,
    rejections.json, probe.jsonl, probe/ and hinted/ trajectories. Returns validation.json's
    figures (written to `metrics`, default beside `out`)."""
    probe, hinted, ctx = params.validation.probe, params.validation.hinted, rollout_settings(params)
    kept, rejections = check_pool(params, ctx, pool, suites)
    probe_set = id_sample(kept, probe.max_tasks)
    model = ctx.load_policy(policy, policy_id=f"iter-{iteration - 1}")
    harness = ctx.harness_for(policy)
    with output_dir(out) as tmp:
        probing = ctx.rollout_config(k=probe.k, harness=harness, suite="probe",
                                     sampling=ctx.sampling_at(probe.temperature), iteration=iteration)
        results = probe_tasks(probe_set, model, probing, out_dir=tmp / "probe", progress=True)
        helped = None
        if hinted.k:
            frontier = id_sample([t for t, r in zip(probe_set, results, strict=True) if r.label == "frontier"],
                                 hinted.max_tasks)
            helping = ctx.rollout_config(k=hinted.k, harness=harness, sampling=ctx.sampling_at(hinted.temperature),
                                         iteration=iteration)
            helped = help_rollouts(frontier, model, helping, out_dir=tmp / "hinted", progress=True)
        results += unprobed(kept, results)
        write_pool(tmp / "valid.jsonl", kept)
        write_json(tmp / "rejections.json", rejections)
        write_probe(tmp / "probe.jsonl", results)
        labels = summarize(results)
    figures = validation_summary(rejections, kept, {"k": probe.k, "tasks": len(probe_set), **labels})
    if helped is not None:
        figures["hinted"] = {"k": hinted.k, **helped}
    write_json(metrics or IterDir(out.parent).validation_json, figures)
    print(f"[validate] probe k={probe.k} on {len(probe_set)} tasks: {labels}")
    if helped is not None:
        print(f"[validate] with a hint, k={hinted.k} on {helped['tasks']} frontier tasks: "
              f"{helped['passed']} of {helped['episodes']} passed ({helped['tasks_passed']} tasks)")
    return figures
