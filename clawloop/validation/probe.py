"""Agent-based validation: k rollouts of the current policy per task, labelled by pass count.

Labels (over the *graded* rollouts g = k - errors, errors being episodes with outcome error or
skipped, or requested samples that never ran):

- too_easy: every graded rollout passed (g/g) — no learning signal left;
- learnable: 0 < passes < g — the RL signal;
- frontier: no graded rollout passed (0/g) — kept with its reference solution for SFT;
- unprobed: nothing was graded (g = 0, e.g. every rollout hit an infrastructure error).

The result is a side table, not a rewrite of the pool: a JSONL file of
`{"task_id", "k", "passes", "errors", "label"}` rows, one per task in pool order, so the pool
itself stays a plain pool (clawloop.tasks.pool.read_pool). `select_by_label` joins the two.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from clawloop.agent.hints import with_hint
from clawloop.agent.rollout import RolloutConfig, run_rollouts
from clawloop.errors import ClawloopError, validated
from clawloop.io import iter_jsonl, write_jsonl
from clawloop.policy.types import Policy
from clawloop.tasks.task import Task

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


def probe_tasks(tasks: Sequence[Task], policy: Policy, config: RolloutConfig, *,
                out_dir: str | Path | None = None, progress: bool = False) -> list[ProbeResult]:
    """Run `config.k` rollouts of `policy` per task (clawloop.agent.rollout) and label each task.

    A config without a suite name writes its trajectories as suite "probe". They go to `out_dir`
    when given (it must not hold episodes already, so one directory is one probe). Results follow
    the order of `tasks`; duplicates are rolled out once.
    """
    if config.k < 1:
        raise ClawloopError(f"k: must be at least 1, got {config.k}")
    if out_dir is not None:
        out_dir = Path(out_dir)
        if out_dir.is_dir() and any(out_dir.rglob("episodes*.parquet")):
            raise ClawloopError(f"{out_dir}: already holds episodes; probe into an empty directory")
    unique = list({t.id: t for t in tasks}.values())
    summaries = run_rollouts(unique, policy, replace(config, suite=config.suite or "probe"), out_dir=out_dir,
                             progress=progress)
    labels = label_episodes(summaries, k=config.k, task_ids=[t.id for t in unique])
    return [labels[t.id] for t in tasks]


def help_rollouts(tasks: Sequence[Task], policy: Policy, config: RolloutConfig, *, out_dir: str | Path,
                  progress: bool = False) -> dict[str, int]:
    """`config.k` rollouts of `policy` per task with its hint ending the instruction
    (clawloop.agent.hints.with_hint; tasks without a reference solution are left out), written
    to `out_dir` as suite "hinted". Training reads their passes with the hint cut. Returns the
    figures: tasks rolled out, episodes, passed episodes, tasks with a pass."""
    hinted = [h for h in (with_hint(t) for t in tasks) if h is not None]
    if not hinted:
        return {"tasks": 0, "episodes": 0, "passed": 0, "tasks_passed": 0}
    records = run_rollouts(hinted, policy, replace(config, suite="hinted"), out_dir=out_dir, progress=progress)
    passed = [r for r in records if r.outcome == "passed"]
    return {"tasks": len(hinted), "episodes": len(records), "passed": len(passed),
            "tasks_passed": len({r.task_id for r in passed})}
