"""The validate stage's steps: the agent-free checks of a synthesized pool, the probe's labels,
the stage's figures (validation.json)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawloop.artifacts.probe import ProbeResult
from clawloop.artifacts.suites import heldout_tasks
from clawloop.core.progress import Progress
from clawloop.core.tasks.pool import read_pool_lenient
from clawloop.core.tasks.task import Task
from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool

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
            tasks, ctx.backend, ctx.jobs, heldout,
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
