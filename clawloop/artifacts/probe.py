"""The probe side table (validated/probe.jsonl): one row per pool task with its label.

Labels (over the *graded* rollouts g = k - errors, errors being episodes with outcome error or
skipped, or requested samples that never ran):

- too_easy: every graded rollout passed (g/g) — no learning signal left;
- learnable: 0 < passes < g — the RL signal;
- frontier: no graded rollout passed (0/g) — kept with its reference solution for SFT;
- unprobed: nothing was graded (g = 0, e.g. every rollout hit an infrastructure error).

The table is a side table, not a rewrite of the pool: a JSONL file of
`{"task_id", "k", "passes", "errors", "label"}` rows, one per task in pool order, so the pool
itself stays a plain pool (clawloop.core.tasks.pool.read_pool). `select_by_label` joins the two.
The probe that fills it runs in the validate phase (clawloop.phases.validate.probe).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from clawloop.core.io import iter_jsonl, write_jsonl
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError, validated

Label = Literal["too_easy", "learnable", "frontier", "unprobed"]
LABELS: tuple[str, ...] = ("too_easy", "learnable", "frontier", "unprobed")


class ProbeResult(BaseModel):
    """The probe of one task."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    k: int = Field(ge=0)
    """Rollouts requested (or seen, when no k was requested)."""
    passes: int = Field(ge=0)
    errors: int = Field(ge=0)
    """Rollouts not graded: outcome error or skipped, or never run."""
    label: Label

    @property
    def graded(self) -> int:
        return self.k - self.errors

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.graded if self.graded else None


def label_of(passes: int, graded: int) -> Label:
    """The label of `passes` out of `graded` graded rollouts."""
    if graded <= 0:
        return "unprobed"
    if passes >= graded:
        return "too_easy"
    if passes == 0:
        return "frontier"
    return "learnable"


def _get(ep: Any, name: str) -> Any:
    return ep.get(name) if isinstance(ep, Mapping) else getattr(ep, name, None)


def label_episodes(
    episodes: Iterable[Any],
    k: int | None = None,
    task_ids: Iterable[str] | None = None,
) -> dict[str, ProbeResult]:
    """Label tasks from episode results: mappings (EPISODE_SCHEMA rows) or objects (rollout
    EpisodeRecord) with `task_id` and `outcome`.

    With `k`, a task with fewer than k episodes counts the missing ones as errors (more than k is
    a bad input). `task_ids` lists tasks to report even without any episode (they become
    unprobed); results follow its order, then the order tasks first appear in `episodes`.
    """
    passes: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    order: dict[str, None] = dict.fromkeys(task_ids or ())
    for ep in episodes:
        tid = _get(ep, "task_id")
        order.setdefault(tid, None)
        seen[tid] += 1
        outcome = _get(ep, "outcome")
        if outcome == "passed":
            passes[tid] += 1
        elif outcome != "failed":
            errors[tid] += 1
    out: dict[str, ProbeResult] = {}
    for tid in order:
        n = seen[tid]
        if k is not None and n > k:
            raise ClawloopError(f"task {tid}: {n} episodes for k={k}")
        total = k if k is not None else n
        err = errors[tid] + (total - n)
        out[tid] = ProbeResult(task_id=tid, k=total, passes=passes[tid], errors=err,
                               label=label_of(passes[tid], total - err))
    return out


def summarize(results: Iterable[ProbeResult]) -> dict[str, int]:
    """Tasks per label (every label present, zeros included)."""
    counts = Counter(r.label for r in results)
    return {label: counts.get(label, 0) for label in LABELS}


def write_probe(path: str | Path, results: Iterable[ProbeResult]) -> int:
    """Write the probe side table (JSONL) atomically; returns the number of rows."""
    return write_jsonl(path, (r.model_dump(mode="json") for r in results))


def read_probe(path: str | Path) -> dict[str, ProbeResult]:
    """Read a probe side table; a bad line raises ClawloopError with file:line and field."""
    out: dict[str, ProbeResult] = {}
    for lineno, obj in iter_jsonl(path):
        r = validated(ProbeResult, obj, f"{path}:{lineno}")
        out[r.task_id] = r
    return out


def select_by_label(
    pool: Iterable[Task], probe: Mapping[str, ProbeResult], labels: Iterable[str]
) -> list[Task]:
    """The tasks of `pool` whose probe label is in `labels` (a task missing from `probe` is unprobed)."""
    wanted = set(labels)
    unknown = wanted - set(LABELS)
    if unknown:
        raise ClawloopError(f"labels: {sorted(unknown)} not among {list(LABELS)}")
    return [t for t in pool if (probe[t.id].label if t.id in probe else "unprobed") in wanted]


def read_episode_rows(directory: str | Path) -> list[dict[str, Any]]:
    """task_id and outcome of every episode in a rollout directory (episodes*.parquet, recursive)."""
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for part in sorted(Path(directory).rglob("episodes*.parquet")):
        try:
            table = pq.read_table(part, columns=["task_id", "outcome"])
        except Exception as e:  # pyarrow raises several types (missing column, not Parquet)
            raise ClawloopError(f"{part}: cannot read task_id/outcome ({e})") from None
        rows += table.to_pylist()
    return rows


