"""What both routine-B variants (hindsight, proposer) share: the conditioning read from the previous
capability report (weak skills, dominant failure modes, the targets of each attempt) and the
attempt/rejection statistics they report. Below run.py, which dispatches to them.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clawloop.diagnosis.schema import CapabilityReport, load_report
from clawloop.errors import ClawloopError, describe_validation_error


def as_report(report: CapabilityReport | dict[str, Any] | str | Path | None) -> CapabilityReport | None:
    """A CapabilityReport from itself, its dict, or a diagnosis.json path (`load_report`; a
    missing file: None). A bad one is a one-line ClawloopError."""
    if report is None or isinstance(report, CapabilityReport):
        return report
    if isinstance(report, dict):
        try:
            return CapabilityReport.model_validate(report)
        except ValidationError as e:
            raise ClawloopError(f"capability report: {describe_validation_error(e)}") from None
    path = Path(report)
    return load_report(path) if path.is_file() else None


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

    def first(self, task_id: str, seen: set[str]) -> bool:
        """True the first time `task_id` comes (it joins `seen`); a repeat is rejected as "duplicate"."""
        if task_id in seen:
            self.reject("duplicate", task_id)
            return False
        seen.add(task_id)
        return True

    def to_json(self) -> dict[str, Any]:
        return {"routine": self.routine, "attempts": self.attempts, "produced": self.produced,
                "yield": round(self.produced / self.attempts, 4) if self.attempts else 0.0,
                "rejected": dict(sorted(self.rejected.items())), "examples": self.examples,
                "duration_s": round(time.monotonic() - self._t0, 3), **self.extra}
