"""The grounded routines' entry point: agent-grounded tasks, by hindsight relabeling or by the proposer.

`synthesize_grounded("hindsight" | "proposer", policy, Attempts(n, ...))` returns the tasks (not yet
validated: they go through agent-free and agent-based validation like procedural ones) and stats:
{"routine", "attempts", "produced", "rejected": {reason: count}, "examples": {reason: [...]},
"duration_s", ...}. What both read from the previous capability report (weak skills, dominant
failure modes) lives in `clawloop.phases.synthesize.steering`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawloop.config.synthesis import GROUNDED, HindsightParams, ProposerParams
from clawloop.core.io import write_json
from clawloop.core.tasks.pool import manifest_path, write_pool
from clawloop.errors import ClawloopError
from clawloop.phases.synthesize.grounded.attempts import Attempts
from clawloop.phases.synthesize.grounded.hindsight import hindsight_tasks
from clawloop.phases.synthesize.grounded.proposer import propose_tasks
from clawloop.phases.synthesize.procedural.generate import diversity
from clawloop.policy.load import load_policy

if TYPE_CHECKING:
    from clawloop.core.tasks.task import Task
    from clawloop.policy.types import Policy


def resolve_policy(policy: Policy | str | Path) -> Policy:
    """A Policy, or one loaded from a spec string ("DIR", "vllm:DIR", "openai:MODEL@URL")."""
    if isinstance(policy, str | Path):
        return load_policy(policy)
    return policy


def synthesize_grounded(routine: str, policy: Policy | str | Path, attempts: Attempts,
                        params: HindsightParams | ProposerParams | None = None) -> tuple[list[Task], dict[str, Any]]:
    """`attempts` of a grounded routine ("hindsight" or "proposer") with the loop model `policy`.

    `params` are the routine's knobs (its own class; None: the defaults). Returns (tasks, stats);
    tasks are unvalidated."""
    if routine not in GROUNDED:
        raise ClawloopError(f"unknown grounded routine {routine!r} (choose from {', '.join(GROUNDED)})")
    if attempts.n < 0:
        raise ClawloopError(f"n must be >= 0 (got {attempts.n})")
    pol = resolve_policy(policy)
    if routine == "hindsight":
        return hindsight_tasks(pol, attempts, HindsightParams.model_validate(params or {}))
    return propose_tasks(pol, attempts, ProposerParams.model_validate(params or {}))


def synth_command(routine: str, model: str, out: Path, attempts: Attempts, report: Path | None = None,
                  skills: list[str] | None = None) -> dict[str, Any]:
    """`clawloop tasks synth --routine hindsight|proposer --model DIR`: write the pool and its
    manifest (`report`: the path `attempts.report` was read from)."""
    knobs = HindsightParams if routine == "hindsight" else ProposerParams
    tasks, stats = synthesize_grounded(routine, model, attempts, knobs(skills=skills) if skills else None)
    write_pool(out, tasks)
    info = {"routine": routine, "seed": attempts.seed, "iteration": attempts.iteration, "model": str(model),
            "report": str(report) if report else None, "tasks": len(tasks), "stats": stats,
            "diversity": diversity(tasks).model_dump()}
    write_json(manifest_path(out), info)
    return info
