"""Rollouts: many episodes in lockstep, trajectories to Parquet.

At each step every live episode's conversation goes into one batched `policy.generate`; the
commands of the replies then run in parallel sandboxes (a thread pool). Episodes leave the batch
as they end and waiting ones take their places, so the batch stays full. Each episode is one
`clawloop.core.agent.episode.Episode` (begin → step … → conclude), which turns skips and breakage of
setup, sandbox, policy or verifier into outcomes. Finished episodes are written in parts
(`episodes-00000.parquet`, `steps-00000.parquet`, ...) following clawloop/core/trajectory.py, so a
crash loses at most one part.
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from clawloop.core import trajectory
from clawloop.core.agent.episode import Episode
from clawloop.core.agent.harness import HarnessConfig, repeat_temperature, tools_for
from clawloop.core.io import atomic_path
from clawloop.core.progress import Progress, progress_for
from clawloop.core.tasks.environment import refuse_unverifiable
from clawloop.core.tasks.task import Task
from clawloop.core.trajectory import EpisodeRecord, clip
from clawloop.errors import ClawloopError
from clawloop.policy.types import Generation, Policy, SamplingParams
from sandbox.base import SandboxConfig

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

        name = f"{self.part:05d}.parquet"
        for prefix, rows, schema in (("steps", self.steps, trajectory.STEP_SCHEMA),  # built on first use
                                     ("episodes", self.episodes, trajectory.EPISODE_SCHEMA)):
            with atomic_path(self.out_dir / f"{prefix}-{name}") as tmp:
                pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
        self.parts.append(self.out_dir / f"episodes-{name}")
        self.part += 1
        self.episodes, self.steps = [], []


@dataclass(frozen=True)
class RolloutConfig:
    """One rollout call's arguments (layer: core.agent; one of five rollout types, docs/names.md): how a
    rollout runs: samples, batch, sandboxes, harness, sampling and the run's labels."""

    k: int = 1
    """Episodes per task."""
    batch_size: int = 32
    """Episodes in lockstep."""
    backend: str = "bwrap"
    harness: HarnessConfig = field(default_factory=HarnessConfig)
    sampling: SamplingParams = field(default_factory=SamplingParams)
    sandbox_config: SandboxConfig | None = None
    """Every sandbox's config (None: environment.default_config(), the task runtime mounted)."""
    iteration: int = -1
    """Loop iteration written into the trajectories."""
    suite: str = ""
    """Suite name written into the trajectories (and the progress label)."""
    workers: int | None = None
    """Threads for commands, setups and verifiers (None: the batch size, within 4..32)."""
    flush_every: int | None = None
    """Episodes per Parquet part (None: the batch size)."""


@dataclass
class _Run:
    """One queued episode with its place in the rollout."""

    sample: int
    episode_id: str
    episode: Episode


def run_tag(policy_id: str, iteration: int, suite: str, seed: int | None) -> str:
    """The run part of episode ids: the same run settings give the same ids."""
    return hashlib.sha256(f"{policy_id}|{iteration}|{suite}|{seed}".encode()).hexdigest()[:8]


def run_rollouts(tasks: Sequence[Task], policy: Policy, config: RolloutConfig | None = None, *,
                 out_dir: str | Path | None = None, progress: bool | Progress = True,
                 on_episode: Callable[[EpisodeRecord], None] | None = None) -> list[EpisodeRecord]:
    """Run `config.k` episodes of `policy` per task, `config.batch_size` at a time in lockstep.

    Trajectories go to `out_dir` (when given) in parts; `on_episode` is called as each episode
    ends. `progress`: True shows episodes done, passed so far, generated tokens/s and the ETA
    (clawloop.core.progress); a Progress of the caller's is advanced instead (it covers several
    calls). Returns one record per episode, in task order then sample order.
    """
    config = config or RolloutConfig()
    refuse_unverifiable(config.backend)
    writer = TrajectoryWriter(out_dir) if out_dir is not None else None
    return LockstepScheduler(tasks, policy, config, writer, on_episode).run(progress)


class LockstepScheduler:
    """Keeps a batch of episodes full: sets them up and verifies them on `life` threads while the
    batch generates, runs the replies' commands on `cmds` threads, records each as it ends."""

    bar: Progress
    life: ThreadPoolExecutor
    """Begins (setup) and concludes (verifier) episodes, overlapping generation."""
    cmds: ThreadPoolExecutor
    """Runs the replies' commands."""

    def __init__(self, tasks: Sequence[Task], policy: Policy, config: RolloutConfig,
                 writer: TrajectoryWriter | None, on_episode: Callable[[EpisodeRecord], None] | None) -> None:
        if config.k < 1 or config.batch_size < 1:
            raise ClawloopError(f"k and batch_size must be at least 1 (got k={config.k}, "
                                f"batch_size={config.batch_size})")
        self.policy, self.config, self.writer, self.on_episode = policy, config, writer, on_episode
        self.policy_id = str(getattr(policy, "policy_id", type(policy).__name__))
        tag = run_tag(self.policy_id, config.iteration, config.suite, config.sampling.seed)
        self.queue = deque(_Run(s, f"{t.id}-{s}-{tag}", Episode(t, config.backend, config.sandbox_config,
                                                                config.harness))
                           for t in tasks for s in range(config.k))
        self.order = {run.episode_id: i for i, run in enumerate(self.queue)}
        self.tools = tools_for(config.harness)
        self.results: dict[str, EpisodeRecord] = {}
        self.live: list[_Run] = []
        self.starting: dict[Future[bool], _Run] = {}
        self.finishing: dict[Future[Any], _Run] = {}
        self.failures = 0
        """Consecutive failed generate calls."""
        self.probed = False

    def run(self, progress: bool | Progress) -> list[EpisodeRecord]:
        """Every episode to its end; on any exception the open sandboxes are closed."""
        n_workers = self.config.workers or min(32, max(4, self.config.batch_size))
        with progress_for(progress, self.config.suite or "rollouts", len(self.queue)) as bar, \
                ThreadPoolExecutor(n_workers, thread_name_prefix="rollout-life") as life, \
                ThreadPoolExecutor(n_workers, thread_name_prefix="rollout-cmd") as cmds:
            self.bar, self.life, self.cmds = bar, life, cmds
            try:
                while self.queue or self.live or self.starting or self.finishing:
                    self.tick()
            except BaseException:
                self.abandon()
                raise
            finally:
                if self.writer is not None:
                    self.writer.flush()
        return sorted(self.results.values(), key=lambda r: self.order[r.episode_id])

    def tick(self) -> None:
        """One lockstep step: refill the batch, one reply for each ready episode, retire ended ones."""
        self.refill()
        self.harvest(block=False)
        ready = self.ready()
        if len(ready) < len(self.starting):  # most of the batch is still being set up: wait for it
            wait(list(self.starting))
            self.harvest(block=False)
            ready = self.ready()
        if ready:
            self.turn(ready)
        for run in [r for r in self.live if r.episode.over]:
            self.live.remove(run)
            self.finishing[self.life.submit(run.episode.conclude)] = run
        if not ready:
            self.harvest(block=True)

    def refill(self) -> None:
        """Begin waiting episodes until the batch (live and being set up) is full."""
        while self.queue and len(self.live) + len(self.starting) < self.config.batch_size:
            run = self.queue.popleft()
            self.starting[self.life.submit(run.episode.begin)] = run
            if not self.probed:  # backends probe the host on first use: let one sandbox do it alone
                wait(list(self.starting))
                self.probed = True

    def ready(self) -> list[_Run]:
        return [r for r in self.live if r.episode.wants_reply()]

    def turn(self, ready: list[_Run]) -> None:
        """One batched generate for `ready`, then each reply's command, in parallel sandboxes. Every
        episode of the batch is charged the generate calls' whole wall time (EpisodeTiming.generation_s)."""
        t0 = time.monotonic()
        try:
            gens = self.policy.generate([r.episode.state.messages for r in ready],  # type: ignore[union-attr]
                                        self.config.sampling, tools=self.tools)
            if len(gens) != len(ready):
                raise ClawloopError(f"policy returned {len(gens)} replies for {len(ready)}")
            gens = self.resample_repeats(ready, gens)
            self.failures = 0
            self.bar.add_tokens(sum(g.completion_tokens for g in gens))
        except Exception as e:
            self.failures += 1
            if self.failures >= MAX_POLICY_FAILURES:
                raise
            for r in ready:
                r.episode.fail("policy", e)
            return
        finally:
            waited = time.monotonic() - t0
            for r in ready:
                r.episode.timing.generation_s += waited
        list(self.cmds.map(Episode.step, [r.episode for r in ready], gens))

    def resample_repeats(self, ready: list[_Run], gens: list[Generation]) -> list[Generation]:
        """`gens`, where a reply repeats its episode's last command, drawn once more at the harness's
        `repeat_resample` (or its learned edit): one batched generate for all such rows, the new
        draw replacing the old whatever it says. Both draws' tokens count."""
        temperature = repeat_temperature(self.config.harness)
        if temperature is None:
            return gens
        again = [i for i, (r, g) in enumerate(zip(ready, gens, strict=True))
                 if r.episode.state is not None and r.episode.state.repeats(g)]
        if not again:
            return gens
        sampling = self.config.sampling.model_copy(update={"temperature": temperature})
        redrawn = self.policy.generate([ready[i].episode.state.messages for i in again],  # type: ignore[union-attr]
                                       sampling, tools=self.tools)
        if len(redrawn) != len(again):
            raise ClawloopError(f"policy returned {len(redrawn)} replies for {len(again)}")
        out = list(gens)
        for i, g in zip(again, redrawn, strict=True):
            out[i] = replace(g, prompt_tokens=g.prompt_tokens + gens[i].prompt_tokens,
                             completion_tokens=g.completion_tokens + gens[i].completion_tokens)
        return out

    def harvest(self, block: bool) -> None:
        """Move begun episodes into the batch and record concluded ones (optionally waiting)."""
        if block and (self.starting or self.finishing):
            wait([*self.starting, *self.finishing], return_when=FIRST_COMPLETED)
        for fut in [f for f in self.starting if f.done()]:
            fut.result()
            self.live.append(self.starting.pop(fut))
        for fut in [f for f in self.finishing if f.done()]:
            fut.result()
            self.record(self.finishing.pop(fut))

    def record(self, run: _Run) -> None:
        summary = episode_record(run, self.policy_id, self.config)
        self.results[run.episode_id] = summary
        if self.writer is not None:
            self.writer.add(summary.to_row(), summary.step_rows())
        self.bar.advance(outcome=summary.outcome)
        if self.on_episode is not None:
            self.on_episode(summary)
        if self.writer is not None and len(self.writer) >= (self.config.flush_every or self.config.batch_size):
            self.writer.flush()

    def abandon(self) -> None:
        """Close every begun episode's sandbox (the rollout is stopping on an exception)."""
        for fut in self.starting:
            fut.cancel()
        wait([f for f in self.starting if not f.cancelled()])
        self.live.extend(r for f, r in self.starting.items() if not f.cancelled())
        for r in self.live:
            r.episode.close()


def episode_record(run: _Run, policy_id: str, config: RolloutConfig) -> EpisodeRecord:
    """The trajectory record of a concluded model episode."""
    ep, st, task = run.episode, run.episode.state, run.episode.task
    assert ep.outcome is not None  # concluded: judge or fail settled reward and reason with it
    return EpisodeRecord(
        task_id=task.id, name=task.name, suite=config.suite, skill=task.skill, level=task.level, agent="model",
        outcome=ep.outcome, reward=ep.reward, reason=ep.reason,
        duration_s=round(ep.duration_s, 4),
        verifier_output=clip(ep.verdict.output or "") if ep.verdict is not None else None,
        steps=list(st.steps) if st else [], prompt_tokens=st.prompt_tokens if st else 0,
        completion_tokens=st.completion_tokens if st else 0, episode_id=run.episode_id, sample=run.sample,
        termination=st.termination if st is not None and st.termination else "error",
        n_format_errors=st.n_format_errors if st else 0, messages=st.messages if st is not None else [],
        policy_id=policy_id, iteration=config.iteration, timing=ep.timing)
