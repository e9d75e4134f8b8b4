"""Attempts, produced tasks and rejections by reason: what both grounded routines report."""

from __future__ import annotations

import time
from typing import Any


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
