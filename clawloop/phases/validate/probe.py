"""Agent-based validation: k rollouts of the current policy per task, labelled by pass count
into the probe side table (clawloop.artifacts.probe: the labels and the file).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from clawloop.artifacts.probe import ProbeResult, label_episodes
from clawloop.core.agent.hints import with_hint
from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError
from clawloop.policy.types import Policy


def probe_tasks(tasks: Sequence[Task], policy: Policy, config: RolloutConfig, *,
                out_dir: str | Path | None = None, progress: bool = False) -> list[ProbeResult]:
    """Run `config.k` rollouts of `policy` per task (clawloop.core.agent.rollout) and label each task.

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
    (clawloop.core.agent.hints.with_hint; tasks without a reference solution are left out), written
    to `out_dir` as suite "hinted". Training reads their passes with the hint cut. Returns the
    figures: tasks rolled out, episodes, passed episodes, tasks with a pass."""
    hinted = [h for h in (with_hint(t) for t in tasks) if h is not None]
    if not hinted:
        return {"tasks": 0, "episodes": 0, "passed": 0, "tasks_passed": 0}
    records = run_rollouts(hinted, policy, replace(config, suite="hinted"), out_dir=out_dir, progress=progress)
    passed = [r for r in records if r.outcome == "passed"]
    return {"tasks": len(hinted), "episodes": len(records), "passed": len(passed),
            "tasks_passed": len({r.task_id for r in passed})}
