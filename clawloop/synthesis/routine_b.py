"""Routine B entry point: agent-grounded tasks, by hindsight relabeling or by the proposer.

`synthesize_routine_b("hindsight" | "proposer", policy=..., n=..., ...)` returns the tasks (not yet
validated: they go through agent-free and agent-based validation like routine A's) and stats:
{"routine", "attempts", "produced", "rejected": {reason: count}, "examples": {reason: [...]},
"duration_s", ...}. Also the conditioning both routines share: which skills are weak and which
failure modes dominate, read from the previous capability report.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawloop.diagnosis.schema import CapabilityReport
from clawloop.errors import ClawloopError

if TYPE_CHECKING:
    from clawloop.models.policy import Policy
    from clawloop.tasks.model import Task

ROUTINES = ("hindsight", "proposer")


def load_report(report: CapabilityReport | dict[str, Any] | str | Path | None) -> CapabilityReport | None:
    """A CapabilityReport from itself, its dict, or a diagnosis.json path (missing file: None)."""
    if report is None or isinstance(report, CapabilityReport):
        return report
    if isinstance(report, dict):
        return CapabilityReport.model_validate(report)
    path = Path(report)
    if not path.is_file():
        return None
    from clawloop.io import read_json

    return CapabilityReport.model_validate(read_json(path))


def weak_skills(report: CapabilityReport | None, known: list[str], k: int = 4) -> list[tuple[str, int, float]]:
    """(skill, level, pass rate) of the weakest cells among `known` skills, weakest first.

    A cell with episodes counts; per skill the lowest level among its weakest cells is kept.
    Recommendations to lower or hold a skill count as weak at the recommended level."""
    if report is None:
        return []
    best: dict[str, tuple[float, int]] = {}
    for c in report.cells:
        if c.skill in known and c.episodes > 0 and c.pass_rate < 1.0:
            cur = best.get(c.skill)
            if cur is None or (c.pass_rate, c.level) < cur:
                best[c.skill] = (c.pass_rate, c.level)
    for r in report.recommendations:
        if r.skill in known and r.action in ("lower", "hold") and r.skill not in best:
            best[r.skill] = (0.5, r.level)
    ranked = sorted(best.items(), key=lambda kv: (kv[1][0], kv[0]))
    return [(s, lvl, rate) for s, (rate, lvl) in ranked[:k]]


def failure_modes(report: CapabilityReport | None, k: int = 3) -> list[str]:
    """The most frequent failure modes of the report (infra errors left out)."""
    if report is None:
        return []
    modes = sorted((m for m in report.failure_modes if m.count > 0 and m.mode != "infra_error"),
                   key=lambda m: (-m.count, m.mode))
    return [m.mode for m in modes[:k]]


def plan_targets(report: CapabilityReport | None, known: list[str], n: int, rng: random.Random,
                 levels: tuple[int, ...] = (1, 2, 3)) -> list[tuple[str, int]]:
    """(skill, level) for each of n attempts: weak skills most (weighted by 1 - pass rate, at
    their weak level), a quarter spread over all skills so nothing is starved."""
    weak = weak_skills(report, known, k=len(known))
    out = []
    for _ in range(n):
        if weak and rng.random() < 0.75:
            weights = [1.0 - rate + 0.05 for _, _, rate in weak]
            skill, level, _ = rng.choices(weak, weights=weights)[0]
            out.append((skill, max(1, min(5, level))))
        else:
            out.append((rng.choice(known), rng.choice(levels)))
    return out


class Stats:
    """Attempts, produced tasks and rejections by reason (with a few examples each)."""

    def __init__(self, routine: str, examples: int = 5) -> None:
        self.routine = routine
        self.attempts = 0
        self.produced = 0
        self.rejected: dict[str, int] = {}
        self.examples: dict[str, list[str]] = {}
        self.extra: dict[str, Any] = {}
        self._n = examples
        self._t0 = time.monotonic()

    def reject(self, reason: str, detail: str = "") -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < self._n:
            ex.append(detail[:300])

    def to_json(self) -> dict[str, Any]:
        return {"routine": self.routine, "attempts": self.attempts, "produced": self.produced,
                "yield": round(self.produced / self.attempts, 4) if self.attempts else 0.0,
                "rejected": dict(sorted(self.rejected.items())), "examples": self.examples,
                "duration_s": round(time.monotonic() - self._t0, 3), **self.extra}


def resolve_policy(policy: Policy | str | Path) -> Policy:
    """A Policy, or one loaded from a spec string ("DIR", "vllm:DIR", "openai:MODEL@URL")."""
    if isinstance(policy, str | Path):
        from clawloop.models.policy import load_policy

        return load_policy(policy)
    return policy


def synthesize_routine_b(routine: str, *, policy: Policy | str | Path, n: int, seed: int = 0,
                         report: CapabilityReport | dict[str, Any] | str | Path | None = None,
                         iteration: int | None = None, backend: str = "bwrap",
                         params: dict[str, Any] | None = None, out_dir: str | Path | None = None,
                         progress: bool = False) -> tuple[list[Task], dict[str, Any]]:
    """n attempts of routine B ("hindsight" or "proposer") with the loop model `policy`.

    `params` are the routine's knobs (HindsightParams / ProposerParams fields); `out_dir` keeps
    the exploration trajectories (hindsight). Returns (tasks, stats); tasks are unvalidated."""
    if routine not in ROUTINES:
        raise ClawloopError(f"unknown routine B variant {routine!r} (choose from {', '.join(ROUTINES)})")
    if n < 0:
        raise ClawloopError(f"n must be >= 0 (got {n})")
    pol = resolve_policy(policy)
    rep = load_report(report)
    if routine == "hindsight":
        from clawloop.synthesis.hindsight import HindsightParams, hindsight_tasks

        return hindsight_tasks(pol, n=n, seed=seed, report=rep, iteration=iteration, backend=backend,
                               params=HindsightParams.model_validate(params or {}), out_dir=out_dir,
                               progress=progress)
    from clawloop.synthesis.proposer import ProposerParams, propose_tasks

    return propose_tasks(pol, n=n, seed=seed, report=rep, iteration=iteration,
                         params=ProposerParams.model_validate(params or {}), progress=progress)


def synth_command(routine: str, *, model: str | None, n: int, out: Path, seed: int = 0,
                  report: Path | None = None, iteration: int = 0, backend: str = "bwrap",
                  skills: list[str] | None = None, conditioning: bool = True,
                  manifest: Path | None = None) -> dict[str, Any]:
    """`clawloop tasks synth --routine hindsight|proposer --model DIR`: write the pool and manifest."""
    from clawloop.io import write_json
    from clawloop.synthesis.procedural import diversity
    from clawloop.tasks.pool import write_pool

    if not model:
        raise ClawloopError(f"--routine {routine}: needs --model (DIR, vllm:DIR or openai:MODEL@URL)")
    if report is not None and not Path(report).is_file():
        raise ClawloopError(f"--report: {report}: no such file")
    rep = load_report(report) if conditioning and report is not None else None
    params = {"skills": skills} if skills else None
    tasks, stats = synthesize_routine_b(routine, policy=model, n=n, seed=seed, report=rep, iteration=iteration,
                                        backend=backend, params=params, progress=True)
    write_pool(out, tasks)
    info = {"routine": routine, "seed": seed, "iteration": iteration, "model": str(model),
            "report": str(report) if report else None, "tasks": len(tasks), "stats": stats,
            "diversity": diversity(tasks).model_dump()}
    write_json(manifest or out.with_name(out.name + ".manifest.json"), info)
    return info
