"""Paired evidence between two evaluations on the same tasks: flips, an exact test, a bootstrap.

Two iterations evaluated on the same held-out tasks are not two independent samples: a task the
base already passes says nothing about the change. What does is the tasks whose verdict changed,
the *flips* (fail → pass gained, pass → fail lost), and an exact sign test on them (McNemar's
exact test when each task has one sample). The bootstrap resamples tasks, keeping each task's two
verdicts together, for an interval of the difference in pass@1.

An evaluation's verdicts are `Outcomes`: task key → share of passing graded samples (1.0 / 0.0
with one sample per task). Tasks that errored or were skipped in either evaluation are not
paired (they were never graded): `Comparison.unpaired` counts them.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass
from typing import Any

Outcomes = dict[str, float]
"""Task key (`suite/task name`) → share of its graded samples that passed."""

BOOTSTRAP_SAMPLES = 2000
"""Resamples for the interval: its ends move by under 0.005 between seeds at 72-272 tasks."""
BOOTSTRAP_SEED = 0
"""Fixed, so the report and `dvc metrics` of a run are reproducible."""


def outcomes_of(episodes: list[Any], suite: str) -> Outcomes:
    """Per-task share of passing graded samples, keyed `suite/task name` (the name, not the content
    hash id: a task edited between iterations is the same question asked again, and the suite
    manifest already refuses a suite that changed within a run)."""
    graded: dict[str, list[bool]] = {}
    for e in episodes:
        if e.outcome in ("passed", "failed"):
            graded.setdefault(f"{suite}/{_name(e)}", []).append(e.outcome == "passed")
    return {k: sum(v) / len(v) for k, v in sorted(graded.items())}


def levels_of(episodes: list[Any], suite: str) -> dict[str, int]:
    """Task key (as `outcomes_of` keys it) → the task's difficulty level, for graded tasks with a skill
    family (synthesized tasks, synth-heldout, shell-core: 1-5); a task imported without one (skill
    "general") carries the loader's default level, which says nothing, and is left out."""
    return {f"{suite}/{_name(e)}": int(e.level) for e in episodes
            if e.outcome in ("passed", "failed") and getattr(e, "skill", None) not in (None, "general")
            and getattr(e, "level", None)}


def _name(e: Any) -> str:
    return getattr(e, "name", None) or e.task_id


def sign_test_p(better: int, worse: int, *, alternative: str = "two-sided") -> float:
    """Exact binomial sign test on the discordant pairs (McNemar's exact test).

    `alternative`: "two-sided", "less" (evidence that the new evaluation is worse: small when
    `worse` dominates) or "greater". 1.0 when no pair is discordant."""
    n = better + worse
    if n == 0:
        return 1.0

    def tail(k: int) -> float:  # P(X <= k), X ~ Binomial(n, 1/2)
        return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n

    if alternative == "less":
        return min(1.0, tail(better))
    if alternative == "greater":
        return min(1.0, tail(worse))
    if alternative != "two-sided":
        raise ValueError(f"alternative: {alternative!r} is not two-sided, less or greater")
    return min(1.0, 2 * tail(min(better, worse)))


PERMUTATION_SAMPLES = 20000
"""Random sign flips when the exact enumeration (2^n for n non-zero differences) is too large."""
EXACT_PERMUTATION_MAX = 16


def permutation_p(diffs: list[float], *, samples: int = PERMUTATION_SAMPLES, seed: int = BOOTSTRAP_SEED) -> float:
    """Two-sided paired permutation (sign-flip) test that the mean per-task difference is zero.

    Under the null each task's two evaluations are exchangeable, so each difference's sign is a
    fair coin. Unlike the sign test it weighs how much each task moved: with k samples per task a
    task going 1/4 -> 4/4 counts more than 1/4 -> 2/4. Exact over all 2^n sign patterns of the n
    non-zero differences up to EXACT_PERMUTATION_MAX, else Monte Carlo with the (b + 1) / (m + 1)
    correction (never 0). With one sample per task it equals the exact sign test."""
    nz = [d for d in diffs if d != 0]
    if not nz:
        return 1.0
    if len({abs(d) for d in nz}) == 1:  # every task moved as far (one sample each): the sign test, exactly
        return sign_test_p(sum(d > 0 for d in nz), sum(d < 0 for d in nz))
    observed = abs(sum(nz)) - 1e-12
    if len(nz) <= EXACT_PERMUTATION_MAX:
        hits = 0
        for mask in range(2 ** len(nz)):
            total = sum(-d if mask >> i & 1 else d for i, d in enumerate(nz))
            hits += abs(total) >= observed
        return hits / 2 ** len(nz)
    rng = random.Random(seed)
    hits = sum(abs(sum(d if rng.random() < 0.5 else -d for d in nz)) >= observed for _ in range(samples))
    return (hits + 1) / (samples + 1)


def bootstrap_interval(diffs: list[float], *, samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED,
                       level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the mean of per-task differences, tasks resampled with replacement."""
    if not diffs:
        return 0.0, 0.0
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(samples))
    lo = means[int((1 - level) / 2 * (samples - 1))]
    hi = means[int((1 + level) / 2 * (samples - 1))]
    return lo, hi


@dataclass(frozen=True)
class Comparison:
    """`after` against `before` on the tasks both graded."""

    paired: int
    """Tasks graded in both evaluations."""
    unpaired: int
    """Tasks graded in only one of them (an error or a skip in the other)."""
    both_passed: int
    both_failed: int
    gained: int
    """Tasks that did better after (fail → pass with one sample per task)."""
    lost: int
    """Tasks that did worse after (pass → fail)."""
    before_rate: float
    """pass@1 of `before` on the paired tasks."""
    after_rate: float
    diff: float
    """after_rate − before_rate."""
    diff_low: float
    """95% paired-bootstrap interval of `diff`."""
    diff_high: float
    p_two_sided: float
    """Exact sign test (McNemar) that the two evaluations differ."""
    p_worse: float
    """One-sided: the evidence that `after` is worse (the gate's test)."""
    p_permutation: float = 1.0
    """Two-sided paired permutation test on the per-task differences (`permutation_p`): with several
    samples per task it uses how far each task moved, where the sign test counts only the direction."""
    gained_tasks: tuple[str, ...] = ()
    lost_tasks: tuple[str, ...] = ()
    before_solved: int = 0
    """Paired tasks `before` passed in at least one sample (pass@k as a count; with one sample, its passes):
    a task neither policy ever solves cannot flip, so this bounds what a sampled comparison can see."""
    after_solved: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("before_rate", "after_rate", "diff", "diff_low", "diff_high", "p_two_sided", "p_worse",
                  "p_permutation"):
            d[k] = round(d[k], 6)
        d["gained_tasks"], d["lost_tasks"] = list(self.gained_tasks), list(self.lost_tasks)
        return d

    def words(self, what: str = "tasks") -> str:
        """'+5 tasks of 72 (7 gained, 2 lost), exact McNemar p = 0.18': the change a reader reads."""
        net = self.gained - self.lost
        perm = (f", paired permutation p = {format_p(self.p_permutation)}"
                if abs(self.p_permutation - self.p_two_sided) > 5e-4 else "")
        return (f"{net:+d} {what} of {self.paired} ({self.gained} gained, {self.lost} lost), "
                f"exact McNemar p = {format_p(self.p_two_sided)}{perm}")


def format_p(p: float) -> str:
    return "1" if p >= 0.9995 else (f"{p:.3f}" if p >= 0.001 else f"{p:.1e}")


def compare(before: Mapping[str, float], after: Mapping[str, float]) -> Comparison:
    """Flips, exact test and bootstrap interval of `after` against `before`."""
    keys = sorted(set(before) & set(after))
    unpaired = len(set(before) ^ set(after))
    diffs = [after[k] - before[k] for k in keys]
    gained = tuple(k for k, d in zip(keys, diffs, strict=True) if d > 0)
    lost = tuple(k for k, d in zip(keys, diffs, strict=True) if d < 0)
    both_passed = sum(before[k] > 0 and after[k] > 0 and before[k] == after[k] for k in keys)
    n = len(keys)
    low, high = bootstrap_interval(diffs)
    return Comparison(
        paired=n, unpaired=unpaired, both_passed=both_passed,
        both_failed=n - len(gained) - len(lost) - both_passed, gained=len(gained), lost=len(lost),
        before_rate=sum(before[k] for k in keys) / n if n else 0.0,
        after_rate=sum(after[k] for k in keys) / n if n else 0.0,
        diff=sum(diffs) / n if n else 0.0, diff_low=low, diff_high=high,
        p_two_sided=sign_test_p(len(gained), len(lost)),
        p_worse=sign_test_p(len(gained), len(lost), alternative="less"),
        p_permutation=permutation_p(diffs), gained_tasks=gained, lost_tasks=lost,
        before_solved=sum(before[k] > 0 for k in keys), after_solved=sum(after[k] > 0 for k in keys))


def suite_of(key: str) -> str:
    return key.split("/", 1)[0]


def by_suite(outcomes: Mapping[str, float], suite: str) -> Outcomes:
    """The outcomes of one suite's tasks."""
    return {k: v for k, v in outcomes.items() if suite_of(k) == suite}


def without_suites(outcomes: Mapping[str, float], suites: Collection[str]) -> Outcomes:
    """The outcomes of every task outside `suites`."""
    return {k: v for k, v in outcomes.items() if suite_of(k) not in suites}


def of_suites(outcomes: Mapping[str, float], suites: Collection[str]) -> Outcomes:
    """The outcomes of the tasks of `suites`."""
    return {k: v for k, v in outcomes.items() if suite_of(k) in suites}


LEVEL_IN_NAME = re.compile(r"-L(\d+)-\d+$")
"""A task name that carries its level (`<skill>-L<level>-<n>`): the fallback where no levels were recorded."""


def by_level(before: Mapping[str, float], after: Mapping[str, float], suite: str,
             levels: Mapping[str, int] | None = None) -> dict[int, Comparison]:
    """`compare` per level for a suite's tasks whose level is known: from `levels` (task key → level,
    as the evaluation recorded it; synth-heldout's tasks are named by their content id), else from a
    name that carries it (LEVEL_IN_NAME); {} when none is."""
    groups: dict[int, list[str]] = {}
    for k in set(by_suite(before, suite)) | set(by_suite(after, suite)):
        m = LEVEL_IN_NAME.search(k)
        level = (levels or {}).get(k) or (int(m.group(1)) if m else None)
        if level is not None:
            groups.setdefault(level, []).append(k)
    return {lv: compare({k: before[k] for k in keys if k in before}, {k: after[k] for k in keys if k in after})
            for lv, keys in sorted(groups.items())}


def compare_suites(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, Comparison]:
    """`compare` per suite (keys `suite/task`), then over all paired tasks under "all"."""
    suites = sorted({suite_of(k) for k in set(before) | set(after)})
    out = {s: compare(by_suite(before, s), by_suite(after, s)) for s in suites}
    return {**out, "all": compare(before, after)}
