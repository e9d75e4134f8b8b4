"""The loop's three contracts on one screen, as mini-swe-agent's `__init__.py` has its own.

    policy.generate(conversations, sampling, tools=...) -> [Generation]   one reply per conversation
    env.open(); env.prepare(); env.exec(command) ...; env.verify(messages) -> Verdict; env.close()
    agent(env)                                     a scripted agent's commands, through env.exec

A **Policy** writes replies, an **Environment** is one task in its sandbox, an **Agent** acts in an
environment. A model is not an Agent: the harness (`clawloop.core.agent.episode.Episode`) turns its
replies into commands one turn at a time, batched across episodes by the lockstep scheduler
(`clawloop.core.agent.rollout`); scripted agents (the oracle, the no-op) call `env.exec` themselves.

Who fulfils them (tests/test_protocols.py checks it): Policy, clawloop.policy's HFPolicy,
VLLMPolicy, LlamaCppPolicy and OpenAIPolicy; Environment, clawloop.core.tasks.environment's
TaskEnvironment; Agent, clawloop.core.agent.oracle's run_oracle and noop_agent. Policy is defined
one layer down, in clawloop.policy.types (the backends and `load_policy` name it there):

    class Policy(Protocol):
        policy_id: str                                   written into every trajectory
        def generate(self, conversations, sampling, *, tools=None) -> list[Generation]: ...
"""

from __future__ import annotations

from typing import Protocol, Self, runtime_checkable

from clawloop.core.tasks.adapters import Transcript
from clawloop.core.tasks.task import Task
from clawloop.core.tasks.verifier import Verdict
from clawloop.policy.types import Policy
from sandbox.base import ExecResult, Sandbox

__all__ = ["Agent", "Environment", "Policy"]


@runtime_checkable
class Environment(Protocol):
    """One run of a task in a sandbox: open → prepare → exec … → verify → close."""

    task: Task
    steps: list[tuple[str, ExecResult]]
    """(command, result) of every `exec`, in order: a scripted agent's transcript."""

    @property
    def sandbox(self) -> Sandbox:
        """The open sandbox (mounts and files beyond `exec`)."""
        ...

    def open(self) -> Self:
        """Create the sandbox."""
        ...

    def prepare(self) -> None:
        """Place the task's files and run its setup."""
        ...

    def exec(self, command: str, timeout: float | None = None, *,
             env: dict[str, str] | None = None) -> ExecResult:
        """Run an agent's command in the task's workdir with the task's env."""
        ...

    def verify(self, messages: Transcript | None = None) -> Verdict:
        """The verifier's verdict on the workspace, in a clean world built only now."""
        ...

    def close(self) -> None:
        """Discard the sandbox (idempotent)."""
        ...


@runtime_checkable
class Agent(Protocol):
    """A scripted agent: acts on a prepared environment through `env.exec` (what it returns is its own)."""

    def __call__(self, env: Environment, /) -> object:
        ...
