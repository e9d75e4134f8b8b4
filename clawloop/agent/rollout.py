"""Rollouts: many episodes in lockstep, trajectories to Parquet.

At each step every live episode's conversation goes into one batched `policy.generate`; the
commands of the replies then run in parallel sandboxes (a thread pool). Episodes leave the batch
as they end and waiting ones take their places, so the batch stays full. Each episode is one
`TaskEnvironment`: open → prepare → turns (`exec`) → verify (with the conversation) → close. Breakage of setup, sandbox or
verifier is outcome "error" (never "failed"); a task that needs its Docker image on another
backend is "skipped". Finished episodes are written in parts (`episodes-00000.parquet`,
`steps-00000.parquet`, ...) following clawloop/trajectory.py, so a crash loses at most one part.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawloop.agent.harness import EpisodeState, HarnessConfig, tools_for
from clawloop.errors import ClawloopError
from clawloop.progress import Progress, progress_for
from clawloop.tasks.environment import TaskEnvironment
from clawloop.tasks.task import Task
from clawloop.trajectory import EpisodeRecord, clip

MAX_POLICY_FAILURES = 3
"""Consecutive failed generate calls after which the rollout stops with the policy's error."""


class TrajectoryWriter:
    """Writes finished episodes to numbered Parquet parts in `out_dir` (never overwrites a part)."""

    def __init__(self, out_dir: str | Path) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        taken = [int(p.stem.split("-")[-1]) for p in self.out_dir.glob("episodes-*.parquet")
                 if p.stem.split("-")[-1].isdigit()]
        self.part = max(taken) + 1 if taken else 0
        self.episodes: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.parts: list[Path] = []

    def add(self, episode: dict[str, Any], steps: list[dict[str, Any]]) -> None:
        self.episodes.append(episode)
        self.steps.extend(steps)

    def __len__(self) -> int:
        return len(self.episodes)

    def flush(self) -> None:
        """Write the buffered episodes as one part: steps first, so an episodes part is complete."""
        if not self.episodes:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        from clawloop.io import atomic_path
        from clawloop.trajectory import EPISODE_SCHEMA, STEP_SCHEMA

        name = f"{self.part:05d}.parquet"
        for prefix, rows, schema in (("steps", self.steps, STEP_SCHEMA),
                                     ("episodes", self.episodes, EPISODE_SCHEMA)):
            with atomic_path(self.out_dir / f"{prefix}-{name}") as tmp:
                pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
        self.parts.append(self.out_dir / f"episodes-{name}")
        self.part += 1
        self.episodes, self.steps = [], []


@dataclass
class _Slot:
    task: Task
    sample: int
    episode_id: str
    t0: float = field(default_factory=time.monotonic)
    env: TaskEnvironment | None = None
    state: EpisodeState | None = None
    outcome: str | None = None
    reward: float | None = None
    error: str | None = None
    verifier_output: str | None = None


def _short(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:500]


def run_tag(policy_id: str, iteration: int, suite: str, seed: int | None) -> str:
    """The run part of episode ids: the same run settings give the same ids."""
    return hashlib.sha256(f"{policy_id}|{iteration}|{suite}|{seed}".encode()).hexdigest()[:8]


def run_rollouts(
    tasks: Sequence[Task],
    policy: Any,
    *,
    k: int = 1,
    batch_size: int = 32,
    backend: str = "bwrap",
    harness_config: HarnessConfig | None = None,
    sampling: Any = None,
    out_dir: str | Path | None = None,
    iteration: int = -1,
    suite: str = "",
    progress: bool | Progress = True,
    sandbox_config: Any = None,
    workers: int | None = None,
    flush_every: int | None = None,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
) -> list[EpisodeRecord]:
    """Run k episodes of `policy` per task, `batch_size` at a time in lockstep.

    Trajectories go to `out_dir` (when given) in parts of `flush_every` (default `batch_size`)
    episodes. `sandbox_config` is a sandbox.base.SandboxConfig (or its dict) for every sandbox
    (default: environment.default_config(), the task runtime mounted);
    `workers` threads run commands, setups and verifiers; `on_episode` is called as each episode
    ends. `progress`: True shows episodes done, passed so far, generated tokens/s and the ETA
    (clawloop.progress); a Progress of the caller's is advanced instead (it covers several calls). Returns one summary per episode, in task order then sample order.
    """
    from clawloop.policy.types import SamplingParams

    if k < 1 or batch_size < 1:
        raise ClawloopError(f"k and batch_size must be at least 1 (got k={k}, batch_size={batch_size})")
    config = harness_config or HarnessConfig()
    sampling = sampling or SamplingParams()
    tools = tools_for(config)
    policy_id = str(getattr(policy, "policy_id", type(policy).__name__))
    tag = run_tag(policy_id, iteration, suite, sampling.seed)
    writer = TrajectoryWriter(out_dir) if out_dir is not None else None
    flush_every = flush_every or batch_size
    queue = deque(_Slot(t, s, f"{t.id}-{s}-{tag}") for t in tasks for s in range(k))
    order = {slot.episode_id: i for i, slot in enumerate(queue)}
    results: dict[str, EpisodeRecord] = {}
    live: list[_Slot] = []
    failures = 0

    def start(slot: _Slot) -> None:
        slot.t0 = time.monotonic()
        try:
            env = TaskEnvironment(slot.task, backend, sandbox_config)
            if (why := env.skip_reason()) is not None:
                slot.outcome, slot.error = "skipped", why[:500]
                return
            slot.env = env.open()
            env.prepare()
        except Exception as e:  # setup breakage is an error of the episode, not of the rollout
            slot.outcome, slot.error = "error", f"setup: {_short(e)}"
            return
        slot.state = EpisodeState(slot.task, config)

    def execute(slot: _Slot) -> None:
        st = slot.state
        assert st is not None and st.pending is not None
        try:
            assert slot.env is not None
            res = slot.env.exec(st.pending, timeout=st.command_timeout())
        except Exception as e:
            st.end("error", f"sandbox: {_short(e)}")
            return
        st.on_result(res)

    def finish(slot: _Slot) -> None:
        st = slot.state
        try:
            if slot.outcome is None and st is not None and st.termination == "error":
                slot.outcome, slot.error = "error", st.error
            elif slot.outcome is None:
                assert slot.env is not None
                verdict = slot.env.verify(st.messages if st is not None else [])
                slot.outcome, slot.reward = verdict.outcome, verdict.reward
                slot.verifier_output = clip(verdict.output or "")
                if slot.outcome not in ("passed", "failed"):
                    slot.error = verdict.reason or slot.error
                    slot.reward = None
        except Exception as e:
            slot.outcome, slot.error, slot.reward = "error", f"verifier: {_short(e)}", None
        finally:
            if slot.env is not None:
                with contextlib.suppress(Exception):
                    slot.env.close()

    n_workers = workers or min(32, max(4, batch_size))
    starting: dict[Future[None], _Slot] = {}
    finishing: dict[Future[None], _Slot] = {}

    def record(s: _Slot) -> None:
        summary = _record(s, policy_id, iteration, suite)
        results[s.episode_id] = summary
        if writer is not None:
            writer.add(summary.to_row(), summary.step_rows())
        bar.advance(outcome=summary.outcome)
        if on_episode is not None:
            on_episode(summary)
        if writer is not None and len(writer) >= flush_every:
            writer.flush()

    def harvest(block: bool) -> None:
        """Move started slots into the batch and record finished ones (optionally waiting)."""
        if block and (starting or finishing):
            wait([*starting, *finishing], return_when=FIRST_COMPLETED)
        for fut in [f for f in starting if f.done()]:
            fut.result()
            live.append(starting.pop(fut))
        for fut in [f for f in finishing if f.done()]:
            fut.result()
            record(finishing.pop(fut))

    # Setup and verification run on `life` threads, overlapping generation; commands run on `cmds`.
    with progress_for(progress, suite or "rollouts", len(queue)) as bar, \
            ThreadPoolExecutor(n_workers, thread_name_prefix="rollout-life") as life, \
            ThreadPoolExecutor(n_workers, thread_name_prefix="rollout-cmd") as cmds:
        try:
            first = True
            while queue or live or starting or finishing:
                while queue and len(live) + len(starting) < batch_size:
                    slot = queue.popleft()
                    starting[life.submit(start, slot)] = slot
                    if first:  # backends probe the host on first use: let one sandbox do it alone
                        wait(list(starting))
                        first = False
                harvest(block=False)
                ready = [s for s in live if s.state is not None and s.outcome is None and s.state.check_time()]
                if len(ready) < len(starting):  # most of the batch is still being set up: wait for it
                    wait(list(starting))
                    harvest(block=False)
                    ready = [s for s in live if s.state is not None and s.outcome is None
                             and s.state.check_time()]
                if ready:
                    try:
                        gens = policy.generate([s.state.messages for s in ready], sampling, tools=tools)
                        if len(gens) != len(ready):
                            raise ClawloopError(f"policy returned {len(gens)} replies for {len(ready)}")
                        failures = 0
                        bar.add_tokens(sum(g.completion_tokens for g in gens))
                    except Exception as e:
                        failures += 1
                        if failures >= MAX_POLICY_FAILURES:
                            raise
                        for s in ready:
                            s.state.end("error", f"policy: {_short(e)}")
                        gens = []
                    runs = [s for s, g in zip(ready, gens, strict=False) if s.state.on_generation(g) is not None]
                    list(cmds.map(execute, runs))
                for s in [s for s in live if s.outcome is not None or s.state is None or s.state.done]:
                    live.remove(s)
                    finishing[life.submit(finish, s)] = s
                if not ready:
                    harvest(block=True)
        except BaseException:
            for fut in starting:
                fut.cancel()
            wait([f for f in starting if not f.cancelled()])
            live.extend(s for f, s in starting.items() if not f.cancelled())
            for s in live:
                _close(s)
            raise
        finally:
            if writer is not None:
                writer.flush()
    return sorted(results.values(), key=lambda r: order[r.episode_id])


def _record(s: _Slot, policy_id: str, iteration: int, suite: str) -> EpisodeRecord:
    st = s.state
    outcome = s.outcome or "error"
    return EpisodeRecord(
        task_id=s.task.id, name=s.task.name, suite=suite, skill=s.task.skill, level=s.task.level, agent="model",
        outcome=outcome,  # type: ignore[arg-type]
        reward=s.reward if outcome in ("passed", "failed") else None,
        reason=s.error if outcome in ("error", "skipped") else None,
        duration_s=round(time.monotonic() - s.t0, 4), verifier_output=s.verifier_output,
        steps=list(st.steps) if st else [], prompt_tokens=st.prompt_tokens if st else 0,
        completion_tokens=st.completion_tokens if st else 0, episode_id=s.episode_id, sample=s.sample,
        termination=st.termination if st is not None and st.termination else "error",
        n_format_errors=st.n_format_errors if st else 0, messages=st.messages if st is not None else [],
        policy_id=policy_id, iteration=iteration)


def _close(slot: _Slot) -> None:
    """Discard the slot's sandbox; a close that fails is printed, never raised (others must close)."""
    if slot.env is not None:
        try:
            slot.env.close()
        except Exception:
            traceback.print_exc()
