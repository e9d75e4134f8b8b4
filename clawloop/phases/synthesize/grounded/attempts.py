"""What a grounded routine is asked for (`Attempts`) and what came of it (`Stats`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clawloop.artifacts.diagnosis import CapabilityReport


@dataclass(frozen=True)
class Attempts:
    """n attempts of a grounded routine, steered by `report`, recorded under `iteration`."""

    n: int
    seed: int = 0
    report: CapabilityReport | None = None
    """The capability report that picks the targets (None: spread over the skills)."""
    iteration: int | None = None
    backend: str = "bwrap"
    """Sandbox backend of hindsight's exploration and replays."""
    out_dir: str | Path | None = None
    """Where hindsight keeps its exploration trajectories (None: not kept)."""
    progress: bool = False
    """Show attempts made (clawloop.core.progress)."""


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
