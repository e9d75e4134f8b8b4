"""Small statistics shared by diagnosis, the curriculum, evaluation and the loop's metrics."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


def wilson_interval(passes: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when n == 0. Counts may be
    fractional (an effective sample size, `effective_trials`)."""
    if n <= 0:
        return 0.0, 1.0
    p = passes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def effective_trials(episodes: int, passes: int, tasks: int, sum_yy: float, sum_yn: float, sum_nn: float) -> float:
    """How many independent episodes `episodes` graded episodes of `tasks` tasks are worth.

    A task's k samples share its difficulty (the probe's episodes are k samples a task), so they
    are not k independent trials: 2 tasks failed 4 times each say little more than 2 tasks failed
    once. This is the design effect of a cluster sample: the pass rate's cluster-robust variance
    (tasks as clusters) against the binomial one; one sample a task gives the count back, and k
    samples that always agree within a task give the number of tasks. `sum_yy`, `sum_yn`, `sum_nn` are
    the sums over tasks of passes², passes × samples and samples². Where every task passed or
    every task failed, the spread says nothing: each task counts once. At least 1, at most
    `episodes`."""
    if episodes <= 0:
        return 0.0
    if tasks <= 1:
        return 1.0
    p = passes / episodes
    if p in (0.0, 1.0):
        return float(min(tasks, episodes))
    spread = sum_yy - 2 * p * sum_yn + p * p * sum_nn  # sum over tasks of (passes - p * samples)²
    if spread <= 0:
        return float(episodes)
    variance = spread / episodes**2
    return max(1.0, min(float(episodes), p * (1 - p) / variance))


@dataclass(frozen=True)
class PassFigures:
    """What a group of episodes came to: outcome counts and pass rates. Errors and skips are never
    graded (neither passes nor failures); every rate is None when nothing was graded."""

    tasks: int
    """Distinct task ids."""
    episodes: int
    passed: int
    failed: int
    errors: int
    skipped: int
    pass_at_1: float | None
    """Mean over the tasks with a graded episode of their share of passing graded samples (the
    usual pass@1; with one sample per task it is passed / (passed + failed))."""
    pass_at_k: float | None
    """Share of those tasks with at least one passing sample."""
    mean_reward: float | None
    """Mean reward of the graded episodes (a missing reward counts 0), clipped to [0, 1]."""
    format_error_episodes: int = 0
    """Episodes ended by format errors in a row (termination "format_errors")."""
    unloadable: int = 0
    """Records of tasks that never loaded (counted among the errors too)."""

    @property
    def graded(self) -> int:
        return self.passed + self.failed


def pass_figures(episodes: Iterable[Any]) -> PassFigures:
    """The one summary of episodes: anything with `task_id`, `outcome` (passed | failed | error |
    skipped) and `reward` (EpisodeRecords, Parquet rows as objects). `clawloop eval`'s summary
    (`evaluation.summarize`) and the evaluate stage's suite metrics (`loop.suite_metrics`) are both
    this, laid out for their files, so they report the same counts and pass@1."""
    eps = list(episodes)
    by_task: dict[str, list[str]] = {}
    for e in eps:
        by_task.setdefault(e.task_id, []).append(e.outcome)
    shares, any_pass = [], []
    for outcomes in by_task.values():
        graded = [o for o in outcomes if o in ("passed", "failed")]
        if graded:
            shares.append(graded.count("passed") / len(graded))
            any_pass.append(float("passed" in graded))
    count = Counter(e.outcome for e in eps)
    rewards = [e.reward or 0.0 for e in eps if e.outcome in ("passed", "failed")]
    return PassFigures(
        tasks=len(by_task), episodes=len(eps), passed=count["passed"], failed=count["failed"],
        errors=count["error"], skipped=count["skipped"],
        pass_at_1=sum(shares) / len(shares) if shares else None,
        pass_at_k=sum(any_pass) / len(any_pass) if any_pass else None,
        mean_reward=min(1.0, max(0.0, sum(rewards) / len(rewards))) if rewards else None,
        format_error_episodes=sum(getattr(e, "termination", None) == "format_errors" for e in eps),
        unloadable=sum(bool(getattr(e, "unloadable", False)) for e in eps))
