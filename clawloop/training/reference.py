"""Reference trajectories: each task's reference solution executed step by step in a sandbox.

Every solution step is one bash tool call, run through the harness exactly as a model's reply
would be (`EpisodeState`: same command timeout, same observation format), then a submit call;
the hidden verifier decides whether the episode is kept. The conversation is therefore in the
harness's own format with real observations, ready for SFT.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal

from clawloop.agent.harness import EpisodeState, HarnessConfig
from clawloop.errors import ClawloopError
from clawloop.executor import ExecutorParams, run_all
from clawloop.tasks.environment import TaskEnvironment
from clawloop.tasks.task import Task
from clawloop.training.data import Conversation
from sandbox.base import SandboxError

Outcome = Literal["passed", "failed", "error", "skipped"]


@dataclass(frozen=True)
class ReferenceResult:
    """What happened when one task's reference solution was replayed."""

    task_id: str
    outcome: Outcome
    reason: str | None = None
    conversation: Conversation | None = None
    """The episode, only when the verifier passed it."""
    duration_s: float = 0.0
    node: str | None = None
    """The Ray node that replayed it (None on the local executor)."""


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """A reply as the model writes it: `<tool_call>` JSON (Qwen3 style)."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def _reply(text: str) -> Any:
    from clawloop.policy.types import Generation

    return Generation(text=text, prompt_tokens=0, completion_tokens=0)


def replay(env: TaskEnvironment, config: HarnessConfig | None = None) -> EpisodeState:
    """Drive the harness with the solution's steps on a prepared environment, then submit."""
    task = env.task
    if task.solution is None:
        raise ClawloopError(f"task {task.id}: has no reference solution")
    state = EpisodeState(task, config or HarnessConfig())
    for step in task.solution.steps:
        command = state.on_generation(_reply(call_text("bash", {"command": step})))
        if command is None:
            break
        state.on_result(env.exec(command, timeout=state.command_timeout()))
    if not state.done:
        state.on_generation(_reply(call_text("submit", {})))
    return state


def reference_episode(task: Task, backend: str = "bwrap", sandbox_config: Any = None,
                      harness_config: HarnessConfig | None = None) -> ReferenceResult:
    """Open an environment, prepare, replay, verify, close. Never raises for task trouble."""
    t0 = time.monotonic()

    def result(outcome: Outcome, reason: str | None = None, conv: Conversation | None = None) -> ReferenceResult:
        return ReferenceResult(task.id, outcome, reason, conv, round(time.monotonic() - t0, 3))

    if task.solution is None or not task.solution.steps:
        return result("skipped", "no reference solution")
    env = TaskEnvironment(task, backend, sandbox_config)
    if (why := env.skip_reason()) is not None:
        return result("skipped", why)
    try:
        with env:
            env.prepare()
            state = replay(env, harness_config)
            if state.termination != "submit":
                return result("skipped", f"replay ended with {state.termination} before submit "
                                         f"({len(task.solution.steps)} steps)")
            verdict = env.verify(state.messages)
    except (ClawloopError, SandboxError, OSError) as e:
        return result("error", str(e).splitlines()[0] if str(e) else type(e).__name__)
    if verdict.outcome != "passed":
        return result(verdict.outcome, verdict.reason or f"reward {verdict.reward}")
    conv = Conversation(task.id, state.messages, "reference",
                        {"skill": task.skill, "level": task.level, "steps": len(task.solution.steps)})
    return result("passed", None, conv)


def reference_trajectories(tasks: Sequence[Task], backend: str = "bwrap", *, sandbox_config: Any = None,
                           harness_config: HarnessConfig | None = None, workers: int = 4,
                           executor: ExecutorParams | str | None = None,
                           ) -> tuple[list[Conversation], list[ReferenceResult]]:
    """Replay every task's reference solution, `workers` at a time on the local executor (or as
    Ray tasks: clawloop.executor); returns (kept conversations, all results), in task order."""
    one = partial(reference_episode, backend=backend, sandbox_config=sandbox_config, harness_config=harness_config)
    results = [replace(r.value, node=r.node) for r in run_all(one, list(tasks), jobs=workers, executor=executor)]
    kept = [r.conversation for r in results if r.conversation is not None]
    return kept, results
