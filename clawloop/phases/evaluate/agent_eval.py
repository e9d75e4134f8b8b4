"""Evaluate an agent on suites of tasks: Harbor directories or JSONL pools.

`load_suite` reads a suite leniently (a task that fails to load becomes an error record naming
the task and the field, listed as unloadable; the rest still runs), while `check_lines` lets the
command line refuse a JSONL suite with malformed lines. `run_agent` dispatches on the agent's
name — the one place a new agent kind plugs in. `summarize` counts passed / failed / errors /
skipped overall, per suite and per skill; errors are never failures and pass_rate is pass@1 as the
loop computes it (`clawloop.core.stats.pass_figures`: with one sample per task, passed / (passed +
failed)), None when nothing was graded. `timing` adds wall_s, episodes_per_s and a
model agent's tokens, so runs at different batch sizes or on different backends compare.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from clawloop.core.agent.model_agent import ModelAgent, run_model_agent
from clawloop.core.agent.oracle import SIMPLE_AGENTS, run_episode
from clawloop.core.executor import ExecutorParams, executor_params, run_all
from clawloop.core.progress import Progress, progress_for
from clawloop.core.stats import pass_figures
from clawloop.core.tasks.environment import open_sandbox, refuse_unverifiable
from clawloop.core.tasks.formats import load_suite_any, score_fields
from clawloop.core.tasks.suite import Suite, SuiteItem, load_suite  # noqa: F401  (re-exported)
from clawloop.core.trajectory import EpisodeRecord
from clawloop.errors import ClawloopError
from sandbox.base import SandboxConfig, SandboxError

AGENTS = (*SIMPLE_AGENTS, "model")
"""Agent names `clawloop eval --agent` accepts."""


def preflight(backend: str, config: SandboxConfig | None = None) -> None:
    """Fail fast (ClawloopError) when the backend cannot run a trivial command."""
    try:
        with open_sandbox(backend, config) as sb:
            r = sb.exec("true", timeout=30)
    except (SandboxError, OSError) as e:
        raise ClawloopError(f"--backend {backend}: cannot start a sandbox ({e})") from None
    if r.exit_code != 0:
        raise ClawloopError(f"--backend {backend}: a trivial command failed ({r.output.strip()[:200]})")


def error_record(item: SuiteItem, agent: str) -> EpisodeRecord:
    """The record of a task that could not be loaded: an error, listed as unloadable, no skill."""
    return EpisodeRecord("", item.name, item.suite, "", 0, agent, "error", reason=item.error, unloadable=True)


def check_lines(suites: Iterable[Suite]) -> None:
    """Bad input stops the run: a JSONL suite with a malformed line (not JSON, not a task) raises
    ClawloopError naming the first such line and the count. (A Harbor task directory that fails
    to load is not a line of an input file: it is listed as unloadable and the rest runs.)"""
    bad = [i for s in suites if s.path.is_file() for i in s.items if i.task is None]
    if bad:
        more = f" (and {len(bad) - 1} more malformed lines)" if len(bad) > 1 else ""
        raise ClawloopError(f"{bad[0].error}{more}; nothing run (--skip-bad-lines runs the rest)")


@dataclass(frozen=True)
class EvalConfig:
    """Where `evaluate` runs its episodes and how it reads the suites."""

    backend: str = "bwrap"
    jobs: int = 2
    """Simple agents' episodes in parallel (threads of the local executor)."""
    sandbox_config: SandboxConfig | None = None
    """Every sandbox's config (None: environment.default_config())."""
    executor: ExecutorParams | str | None = None
    """Runs the oracle / no-op episodes as Ray tasks (clawloop.core.executor); None: local."""
    fmt: str = "auto"
    """Suite format (`clawloop.core.tasks.formats.load_suite_any`): auto | harbor | jsonl | clawgym | claw-eval-live."""
    format_options: dict[str, Any] = field(default_factory=dict)
    """The format's options (grader_root, skills, pass_threshold)."""
    skip_bad_lines: bool = True
    """False refuses a JSONL suite with a malformed line (`check_lines`) before anything runs."""


def run_agent(agent: str, items: list[SuiteItem], config: EvalConfig, *, model: ModelAgent | None = None,
              progress: Progress | None = None) -> list[EpisodeRecord]:
    """Run `agent` on every loadable item; records come back in item order.

    The one dispatch on the agent's name: simple agents (oracle, noop) run one sandboxed episode
    per task on `config.jobs` threads, or one Ray task each (`config.executor`, clawloop.core.executor:
    the record's `node` names the Ray node); a model agent (`--agent model --model DIR`: `model`,
    built from one Params as a stage's rollouts are) plugs in here, its policy and sandboxes on this machine. `progress` is advanced once per episode (and
    by generated tokens for a model agent).
    """
    todo = [i for i in items if i.task is not None]
    if agent in SIMPLE_AGENTS:
        return _run_simple(agent, todo, config, progress)
    if agent == "model":  # k samples per task in lockstep batches (clawloop.core.agent.rollout)
        return run_model_agent(todo, _needs(model), backend=config.backend, sandbox_config=config.sandbox_config,
                               progress=progress)
    raise ClawloopError(f"--agent: unknown agent {agent!r} (known: {', '.join(AGENTS)})")


def _needs(model: ModelAgent | None) -> ModelAgent:
    if model is None:
        raise ClawloopError("--agent model needs --model (DIR, vllm:DIR or openai:MODEL@URL)")
    return model


def _simple_episode(item: SuiteItem, agent: str, backend: str, config: SandboxConfig | None) -> EpisodeRecord:
    assert item.task is not None
    # the task's format adapter grades it (ClawGym / Claw-Eval-Live their own way, issue #10)
    return run_episode(item.task, agent, backend, config, suite=item.suite, name=item.name)


def _run_simple(agent: str, items: list[SuiteItem], config: EvalConfig,
                progress: Progress | None) -> list[EpisodeRecord]:
    def done(_k: int, ran: Any) -> None:
        if progress is not None:
            progress.advance(outcome=ran.value.outcome)

    one = partial(_simple_episode, agent=agent, backend=config.backend, config=config.sandbox_config)
    ran = run_all(one, items, jobs=config.jobs, executor=config.executor, on_done=done)
    for r in ran:
        r.value.node = r.node
    return [r.value for r in ran]


def _counts(records: Iterable[EpisodeRecord]) -> dict[str, Any]:
    """Counts by outcome ("tasks": records) and pass_rate, the pass@1 of `clawloop.core.stats.pass_figures`
    (the loop's metric; passed / (passed + failed) with one sample per task), None when nothing was
    graded (a 0.0 there would read as a real zero)."""
    records = list(records)
    f = pass_figures(records)
    return {"tasks": len(records), "passed": f.passed, "failed": f.failed, "errors": f.errors,
            "skipped": f.skipped, "unloadable": f.unloadable,
            "pass_rate": round(f.pass_at_1, 4) if f.pass_at_1 is not None else None, **score_fields(records)}


def _detail(records: Iterable[EpisodeRecord]) -> list[dict[str, Any]]:
    return [{"suite": r.suite, "task": r.name, "reason": r.reason} for r in records][:50]


def summarize(records: list[EpisodeRecord], agent: str, backend: str) -> dict[str, Any]:
    """Overall, per-suite and per-skill counts; pass_rate excludes errors and skips. Tasks that
    never loaded count as errors and are listed apart (unloadable_detail), under no skill."""
    by: dict[str, dict[str, list[EpisodeRecord]]] = {"suites": {}, "skills": {}}
    for r in records:
        by["suites"].setdefault(r.suite, []).append(r)
        if not r.unloadable:
            by["skills"].setdefault(r.skill, []).append(r)
    return {
        **_counts(records), "agent": agent, "backend": backend,
        "suites": {k: _counts(v) for k, v in by["suites"].items()},
        "skills": {k: _counts(v) for k, v in sorted(by["skills"].items())},
        "errors_detail": _detail(r for r in records if r.outcome == "error" and not r.unloadable),
        "unloadable_detail": _detail(r for r in records if r.unloadable),
        "skipped_detail": _detail(r for r in records if r.outcome == "skipped"),
    }


def timing(records: list[EpisodeRecord], wall_s: float, agent: str) -> dict[str, Any]:
    """Throughput figures of a run, so batch sizes and backends compare from the summary:
    wall_s, episodes_per_s (episodes that ran; unloadable tasks are not episodes) and, for a
    model agent, prompt/completion token counts and tokens_per_s (generated tokens per second)."""
    ran = [r for r in records if not r.unloadable]
    out: dict[str, Any] = {"wall_s": round(wall_s, 3), "episodes": len(ran),
                           "episodes_per_s": round(len(ran) / wall_s, 4) if wall_s > 0 else None}
    if agent == "model":
        completion = sum(r.completion_tokens for r in ran)
        out.update(prompt_tokens=sum(r.prompt_tokens for r in ran), completion_tokens=completion,
                   tokens_per_s=round(completion / wall_s, 2) if wall_s > 0 else None)
    return out


def evaluate(paths: list[str | Path], agent: str, config: EvalConfig | None = None, *,
             model: ModelAgent | None = None,
             progress: bool | Progress = False) -> tuple[list[EpisodeRecord], dict[str, Any]]:
    """Load the suites, run the agent, and summarize: (records in suite order, summary).

    `config` says how the suites are read and where the episodes run (EvalConfig); `model` is the
    model agent's policy and rollout config (clawloop.core.rollout_settings.RolloutSettings.model_agent). `progress`: True (or the caller's Progress)
    shows episodes as they end. The summary carries `timing` (wall_s, episodes_per_s, tokens);
    wall_s runs from after the suites and a model agent's policy are loaded to the last episode
    (a Ray cluster's start or join included). With Ray as the executor the summary names it and
    counts episodes per node ("nodes").
    """
    config = config or EvalConfig()
    ex = executor_params(config.executor)
    config = replace(config, executor=ex)
    if agent == "model" and ex.kind != "local":
        raise ClawloopError(f"--executor {ex.kind}: runs the oracle and no-op agents' episodes; a model agent's "
                            "episodes run beside its policy, on this machine (--executor local)")
    if agent not in AGENTS:
        raise ClawloopError(f"--agent: unknown agent {agent!r} (known: {', '.join(AGENTS)})")
    refuse_unverifiable(config.backend)
    suites = [load_suite_any(p, config.fmt, **config.format_options) for p in paths]
    if not config.skip_bad_lines:
        check_lines(suites)
    items = [i for s in suites for i in s.items]
    failed_loads = [error_record(i, agent) for i in items if i.task is None]
    if agent == "model":
        model = _needs(model)
    per_task = model.config.k if model is not None and agent == "model" else 1
    runnable = any(i.task is not None for i in items)
    total = len(failed_loads) + per_task * (len(items) - len(failed_loads))
    with progress_for(progress, f"eval {agent}", total) as bar:
        bar.set_total(total)  # a caller's reporter learns it here
        if failed_loads:
            bar.advance(len(failed_loads), outcome="unloadable")
        if model is not None and agent == "model" and runnable:  # loaded under the progress, off the clock
            model = model.loaded()
        t0 = time.perf_counter()
        if runnable:
            preflight(config.backend, config.sandbox_config)
        ran = run_agent(agent, items, config, model=model, progress=bar)
        wall = time.perf_counter() - t0
    if agent == "model":  # k samples per task: not one record per item
        records = [*failed_loads, *ran]
    else:
        done, loads = iter(ran), iter(failed_loads)
        records = [next(done) if i.task is not None else next(loads) for i in items]
    nodes: dict[str, int] = {}
    for r in records:
        if r.node is not None:
            nodes[r.node] = nodes.get(r.node, 0) + 1
    where = {"executor": ex.kind, **({"nodes": dict(sorted(nodes.items()))} if nodes else {})}
    return records, {**summarize(records, agent, config.backend), **timing(records, wall, agent), **where}
