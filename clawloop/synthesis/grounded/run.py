"""The grounded routines' entry point: agent-grounded tasks, by hindsight relabeling or by the proposer.

`synthesize_grounded("hindsight" | "proposer", policy=..., n=..., ...)` returns the tasks (not yet
validated: they go through agent-free and agent-based validation like procedural ones) and stats:
{"routine", "attempts", "produced", "rejected": {reason: count}, "examples": {reason: [...]},
"duration_s", ...}. What both read from the previous capability report (weak skills, dominant
failure modes) lives in `clawloop.synthesis.steering`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawloop.diagnosis.schema import CapabilityReport
from clawloop.errors import ClawloopError
from clawloop.io import write_json
from clawloop.policy.load import load_policy
from clawloop.synthesis.config import GROUNDED, HindsightParams, ProposerParams
from clawloop.synthesis.grounded.hindsight import hindsight_tasks
from clawloop.synthesis.grounded.proposer import propose_tasks
from clawloop.synthesis.procedural.generate import diversity
from clawloop.synthesis.steering import as_report
from clawloop.tasks.pool import write_pool

if TYPE_CHECKING:
    from clawloop.policy.types import Policy
    from clawloop.tasks.task import Task


def resolve_policy(policy: Policy | str | Path) -> Policy:
    """A Policy, or one loaded from a spec string ("DIR", "vllm:DIR", "openai:MODEL@URL")."""
    if isinstance(policy, str | Path):
        return load_policy(policy)
    return policy


def synthesize_grounded(routine: str, *, policy: Policy | str | Path, n: int, seed: int = 0,
                        report: CapabilityReport | dict[str, Any] | str | Path | None = None,
                        iteration: int | None = None, backend: str = "bwrap",
                        params: HindsightParams | ProposerParams | None = None, out_dir: str | Path | None = None,
                        progress: bool = False) -> tuple[list[Task], dict[str, Any]]:
    """n attempts of a grounded routine ("hindsight" or "proposer") with the loop model `policy`.

    `params` are the routine's knobs (its own class; None: the defaults); `out_dir` keeps the
    exploration trajectories (hindsight). Returns (tasks, stats); tasks are unvalidated."""
    if routine not in GROUNDED:
        raise ClawloopError(f"unknown grounded routine {routine!r} (choose from {', '.join(GROUNDED)})")
    if n < 0:
        raise ClawloopError(f"n must be >= 0 (got {n})")
    pol = resolve_policy(policy)
    rep = as_report(report)
    if routine == "hindsight":
        return hindsight_tasks(pol, n=n, seed=seed, report=rep, iteration=iteration, backend=backend,
                               params=HindsightParams.model_validate(params or {}), out_dir=out_dir,
                               progress=progress)
    return propose_tasks(pol, n=n, seed=seed, report=rep, iteration=iteration,
                         params=ProposerParams.model_validate(params or {}), progress=progress)


def synth_command(routine: str, *, model: str | None, n: int, out: Path, seed: int = 0,
                  report: Path | None = None, iteration: int = 0, backend: str = "bwrap",
                  skills: list[str] | None = None, conditioning: bool = True,
                  manifest: Path | None = None) -> dict[str, Any]:
    """`clawloop tasks synth --routine hindsight|proposer --model DIR`: write the pool and manifest."""
    if not model:
        raise ClawloopError(f"--routine {routine}: needs --model (DIR, vllm:DIR or openai:MODEL@URL)")
    if report is not None and not Path(report).is_file():
        raise ClawloopError(f"--report: {report}: no such file")
    rep = as_report(report) if conditioning and report is not None else None
    knobs = HindsightParams if routine == "hindsight" else ProposerParams
    params = knobs(skills=skills) if skills else None
    tasks, stats = synthesize_grounded(routine, policy=model, n=n, seed=seed, report=rep, iteration=iteration,
                                       backend=backend, params=params, progress=True)
    write_pool(out, tasks)
    info = {"routine": routine, "seed": seed, "iteration": iteration, "model": str(model),
            "report": str(report) if report else None, "tasks": len(tasks), "stats": stats,
            "diversity": diversity(tasks).model_dump()}
    write_json(manifest or out.with_name(out.name + ".manifest.json"), info)
    return info
