"""One episode: a task in a sandbox from setup to verdict, `begin` → `step` … → `conclude`.

Every runner drives an `Episode`: the lockstep scheduler (clawloop.core.agent.rollout) steps a model's
replies through it, the oracle and no-op agents (clawloop.core.agent.oracle) `act` on its
environment, reference trajectories (clawloop.phases.train.reference) replay a solution through its
turns, and GRPO's environment (clawloop.phases.train.grpo) steps TRL's tool calls through it.

    episode = Episode(task, backend, sandbox_config, harness)
    if episode.begin():                      # open + prepare (skips and setup errors end it here)
        while episode.wants_reply():         # turns left, time left
            episode.step(policy.generate(...))   # the reply → its command → the observation
    episode.conclude()                       # verify with the conversation, close

Trouble is an outcome here, never an exception out of the runner: a task that cannot run on this
backend is "skipped"; breakage of setup, sandbox, policy or verifier is "error" (never "failed"),
its reason naming the phase ("setup: TaskSetupError: ..."). `EpisodeState` is the turn logic
without any I/O (prompt, parsing, format hints, turn and time budgets); a command that runs out
of the episode's time ends it with termination "timeout", which is still graded.

`Episode.timing` (an EpisodeTiming, the record's `timing`) clocks each phase: setup (`begin`),
the agent's commands, verification and teardown (`conclude`); the lockstep scheduler adds the
generate calls each episode waited for.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from clawloop.core.agent.harness import (
    SUBMIT_CHECK,
    HarnessConfig,
    episode_limits,
    format_observation,
    harness_edits,
    hint_message,
    initial_messages,
    submit_check_note,
    submit_check_on,
    tools_for,
)
from clawloop.core.agent.tool_calls import (
    FormatError,
    ParsedCall,
    assistant_message,
    clean_text,
    parse_reply,
    tool_message,
)
from clawloop.core.protocols import Agent
from clawloop.core.tasks.environment import TaskEnvironment
from clawloop.core.tasks.task import Task
from clawloop.core.tasks.verifier import Verdict
from clawloop.core.trajectory import EpisodeTiming, Step
from clawloop.errors import ClawloopError
from clawloop.policy.types import Generation
from sandbox.base import ExecResult, SandboxConfig, SandboxError

Outcome = Literal["passed", "failed", "error", "skipped"]
Phase = Literal["setup", "agent", "sandbox", "policy", "verifier"]

REASON_CHARS = 500
"""Longest reason kept for a skip or a failure."""
AGENT_TROUBLE = (ClawloopError, SandboxError, OSError)
"""What a scripted agent's commands may raise as task trouble; anything else is a bug of the
agent (a test's assertion included) and propagates."""


def failure_reason(phase: Phase, error: BaseException) -> str:
    """The reason of an episode broken in `phase` by `error`."""
    return f"{phase}: {f'{type(error).__name__}: {error}'[:REASON_CHARS]}"


@dataclass
class EpisodeState:
    """The agent side of one episode, driven by replies and command results (no I/O here)."""

    task: Task
    config: HarnessConfig = field(default_factory=HarnessConfig)
    messages: list[dict[str, Any]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    termination: str | None = None
    """One of trajectory.TERMINATIONS once ended."""
    error: str | None = None
    """Why the episode broke, when termination is "error"."""
    n_format_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    pending: str | None = None
    """The command waiting to run, after a bash call."""
    _streak: int = 0
    _submit_checked: bool = False
    command_s: float = 0.0
    """Wall clock spent in the agent's commands so far: what `episode_timeout_s` bounds."""

    def __post_init__(self) -> None:
        if not self.messages:
            self.messages = initial_messages(self.task, self.config)
        self.max_turns, self.command_timeout_s, self.episode_timeout_s = episode_limits(self.task, self.config)

    @property
    def done(self) -> bool:
        return self.termination is not None

    @property
    def tools(self) -> list[dict[str, Any]]:
        return tools_for(self.config)

    def time_left(self) -> float:
        """Seconds of the command budget left (generation time is not counted)."""
        return self.episode_timeout_s - self.command_s

    def end(self, termination: str, error: str | None = None) -> None:
        if self.termination is None:
            self.termination, self.error, self.pending = termination, error, None

    def check_time(self) -> bool:
        """End the episode with "timeout" when its wall-clock budget is spent; True while alive."""
        if not self.done and self.time_left() <= 0:
            self.end("timeout")
        return not self.done

    def command_timeout(self) -> float:
        """Timeout for the pending command: the per-command limit within the episode budget."""
        return max(0.1, min(self.command_timeout_s, self.time_left()))

    def on_generation(self, gen: Generation) -> str | None:
        """Record a reply; return the command to run, or None (episode ended or hint sent)."""
        if self.done:
            return None
        self.prompt_tokens += gen.prompt_tokens
        self.completion_tokens += gen.completion_tokens
        if gen.finish_reason == "context":
            self.end("max_turns")
            return None
        text = clean_text(gen.text)
        limit = self.config.max_reply_chars
        stored = text if len(text) <= limit else text[:limit]
        rec = Step(step=len(self.steps), content=stored, tokens=gen.completion_tokens)
        self.steps.append(rec)
        parsed = self._parse(text)
        if isinstance(parsed, FormatError):
            return self._on_format_error(parsed, rec, stored)
        self._streak = 0
        rec.tool, rec.format = parsed.name, parsed.format
        self.messages.append(assistant_message(parsed.command, parsed.content))
        if parsed.name == "submit":
            note = self._submit_check()
            if note is None:
                self.end("submit")
            else:  # a checked submit: the note is its observation, the turn counts
                rec.output = note
                self.messages.append(tool_message(note, name=SUBMIT_CHECK))
                if len(self.steps) >= self.max_turns:
                    self.end("max_turns")
            return None
        rec.command = parsed.command
        if not self.check_time():
            return None
        self.pending = parsed.command
        return parsed.command

    def _submit_check(self) -> str | None:
        """The note that answers this submit instead of ending the episode (`submit_check`: the
        first submit, when no command ran yet or the last one failed), or None."""
        if not submit_check_on(self.config) or self._submit_checked:
            return None
        last = self._last_ran(self.steps)
        if last is not None and last.exit_code == 0 and not last.timed_out:
            return None
        self._submit_checked = True
        if last is None:
            return submit_check_note(None)
        return submit_check_note(last.exit_code if last.exit_code is not None else -1)

    def repeats(self, gen: Generation) -> bool:
        """Whether the reply `gen` is a bash call of exactly the last command this episode ran."""
        last = self._last_ran(self.steps)
        if last is None or self.done:
            return False
        parsed = self._parse(clean_text(gen.text))
        return not isinstance(parsed, FormatError) and parsed.name == "bash" and parsed.command == last.command

    def _parse(self, text: str) -> ParsedCall | FormatError:
        """The call in a cleaned reply, against this episode's tools and the harness's leniency."""
        names = tuple(t["function"]["name"] for t in self.tools)
        return parse_reply(text, max_chars=self.config.max_reply_chars, tools=names, lenient=self.config.lenient_calls)

    @staticmethod
    def _last_ran(steps: list[Step]) -> Step | None:
        """The last of `steps` that ran a command."""
        return next((s for s in reversed(steps) if s.command is not None), None)

    def _on_format_error(self, error: FormatError, rec: Step, stored: str) -> None:
        """A reply without a valid call: the end without a submit tool, else a hint or the end."""
        self.messages.append({"role": "assistant", "content": stored})
        if error.kind == "no_tool_call" and not self.config.submit_tool:
            self.end("no_tool_call")
            return None
        rec.format_error, rec.tool, rec.error_kind = True, error.tool, error.kind
        self.n_format_errors += 1
        self._streak += 1
        if self._streak >= self.config.max_format_errors:
            self.end("format_errors")
        elif len(self.steps) >= self.max_turns:
            self.end("max_turns")
        else:
            self.messages.append(hint_message(error, self.config))
        return None

    def on_result(self, result: ExecResult) -> None:
        """Record the result of the pending command and hand it to the model."""
        if self.pending is None:
            return
        rec = self.steps[-1]
        timeout = self.command_timeout()
        limit = harness_edits(self.config).observation_chars or self.config.observation_chars
        last = self._last_ran(self.steps[:-1])
        repeated = self.config.repeat_note and last is not None and last.command == rec.command
        obs = format_observation(result, limit=limit, timeout_s=timeout, repeated=repeated,
                                 submit_tool=self.config.submit_tool)
        rec.exit_code, rec.output, rec.timed_out, rec.duration_s = (
            result.exit_code, obs, result.timed_out, result.duration_s)
        self.command_s += result.duration_s
        self.messages.append(tool_message(obs))
        self.pending = None
        if len(self.steps) >= self.max_turns:
            self.end("max_turns")
        else:
            self.check_time()


@dataclass
class Episode:
    """One run of `task` on `backend`: set up, the agent's turns, verified, closed.

    `harness` gives the episode model turns (`state`, an EpisodeState); without one the agent
    calls the environment itself (`act`, `run_command`). `sandbox_config` None opens the sandbox
    with `environment.default_config()`. With `needs_solution`, a task without a reference
    solution is skipped (the oracle's episodes)."""

    task: Task
    backend: str = "bwrap"
    sandbox_config: SandboxConfig | None = None
    harness: HarnessConfig | None = None
    needs_solution: bool = False
    env: TaskEnvironment | None = None
    state: EpisodeState | None = None
    outcome: Outcome | None = None
    """Set once the episode is over: skipped or broken early, else by the verdict."""
    reward: float | None = None
    """The verifier's reward of a graded (passed or failed) episode, else None."""
    reason: str | None = None
    """Why an episode was skipped or is an error."""
    error_phase: Phase | None = None
    """Where an error episode broke (a verdict of "error" is the verifier's)."""
    commands: int = 0
    """Agent commands sent to the sandbox through `run_command` (run or not)."""
    verdict: Verdict | None = None
    started: float = field(default_factory=time.monotonic)
    timing: EpisodeTiming = field(default_factory=EpisodeTiming)
    """Seconds per phase; `total_s` is set by `conclude`."""

    @contextmanager
    def clock(self, phase: str) -> Iterator[None]:
        """Add the wall time of the block to `timing`'s `phase` (whatever it raises)."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            setattr(self.timing, phase, getattr(self.timing, phase) + time.monotonic() - t0)

    # -- set up ---------------------------------------------------------------------------
    def begin(self) -> bool:
        """Open the sandbox and prepare the task; False when the episode is already over (the
        task cannot run here, or its setup broke: `outcome` says which)."""
        self.started = time.monotonic()
        with self.clock("setup_s"):
            return self._begin()

    def _begin(self) -> bool:
        try:
            self.env = TaskEnvironment(self.task, self.backend, self.sandbox_config)
            why = self.env.skip_reason()
            if why is None and self.needs_solution and self.task.solution is None:
                why = "no reference solution"
            if why is not None:
                self.outcome, self.reason = "skipped", why[:REASON_CHARS]
                return False
            self.env.open()
            self.env.prepare()
        except Exception as e:  # setup breakage is an error of the episode, not of its runner
            self.fail("setup", e)
            return False
        if self.harness is not None:
            self.state = EpisodeState(self.task, self.harness)
        return True

    # -- the agent's turns ------------------------------------------------------------------
    def wants_reply(self) -> bool:
        """Whether the model has a turn now (the episode runs, with turns and time left)."""
        return self.outcome is None and self.state is not None and self.state.check_time()

    @property
    def over(self) -> bool:
        """Whether the agent's part has ended: ready to `conclude`."""
        return self.outcome is not None or self.state is None or self.state.done

    def step(self, reply: Generation) -> str | None:
        """One model turn: record `reply` and run the command it calls; returns that command, or
        None when the reply called none (a format hint went back, or the episode ended)."""
        assert self.state is not None
        command = self.state.on_generation(reply)
        if command is not None:
            result = self.run_command(command, self.state.command_timeout())
            if result is not None:
                self.state.on_result(result)
        return command

    def run_command(self, command: str, timeout: float) -> ExecResult | None:
        """Run an agent's command; None when the sandbox broke (the episode is then an error)."""
        self.commands += 1
        try:
            assert self.env is not None
            with self.clock("commands_s"):
                return self.env.exec(command, timeout=timeout)
        except Exception as e:
            self.fail("sandbox", e)
            return None

    def act(self, agent: Agent) -> None:
        """Let a scripted agent act on the prepared environment (through `env.exec`)."""
        assert self.env is not None
        try:
            with self.clock("commands_s"):
                agent(self.env)
        except AGENT_TROUBLE as e:
            self.fail("agent", e)

    def fail(self, phase: Phase, error: BaseException) -> None:
        """End the episode as an error of `phase` (the first failure is the one kept)."""
        if self.outcome is None:
            self.outcome, self.reason, self.reward = "error", failure_reason(phase, error), None
            self.error_phase = phase
        if self.state is not None:
            self.state.end("error", self.reason)

    # -- verify and clean up ------------------------------------------------------------------
    def conclude(self) -> Outcome:
        """Verify the workspace (unless the episode is already over) and close the sandbox. The
        verifier reads the conversation of model turns; a scripted agent's `env.steps` stand in."""
        try:
            if self.outcome is None:
                assert self.env is not None
                with self.clock("verification_s"):
                    verdict = self.env.verify(self.state.messages if self.state is not None else None)
                self.judge(verdict)
        except Exception as e:
            self.fail("verifier", e)
        finally:
            self.close()
            self.timing.total_s = time.monotonic() - self.started
        assert self.outcome is not None
        return self.outcome

    def judge(self, verdict: Verdict) -> None:
        """Take the verifier's verdict: graded (passed, failed) with its reward, else an error."""
        self.verdict, self.outcome = verdict, verdict.outcome
        graded = verdict.outcome in ("passed", "failed")
        self.reward = verdict.reward if graded else None
        self.reason = None if graded else verdict.reason
        self.error_phase = None if graded else "verifier"

    @property
    def agent_acted(self) -> bool:
        """Whether any agent command reached the sandbox (a model's or a scripted agent's)."""
        return self.commands > 0 or bool(self.env is not None and self.env.steps)

    @property
    def training_reward(self) -> float | None:
        """The reward a trainer learns from: a graded episode's reward; 0.0 for a sandbox or
        verifier error once the agent's commands have run; None (masked) for everything else
        (skips, setup and policy trouble, an error before any command).

        An agent can break its own judge: replace /logs/verifier with a link the mount refuses,
        bloat /etc past the trusted root's caps, kill the sandbox's exec server. Masked, such an
        episode would sit out of the group baseline while a plain failure is pushed down, so a
        policy would drift towards breaking the verifier rather than failing. Only validated tasks
        reach training (their verifier judged the reference solution and the no-op, twice), so an
        error after the agent acted is the agent's doing until shown otherwise."""
        if self.outcome in ("passed", "failed"):
            return self.reward
        if self.outcome == "error" and self.error_phase in ("sandbox", "verifier") and self.agent_acted:
            return 0.0
        return None

    def close(self) -> None:
        """Discard the sandbox (idempotent); a close that fails is printed, never raised (the
        verdict stands, and a runner closing many must reach the others)."""
        if self.env is not None:
            try:
                with self.clock("teardown_s"):
                    self.env.close()
            except Exception:
                traceback.print_exc()

    @property
    def duration_s(self) -> float:
        return time.monotonic() - self.started
