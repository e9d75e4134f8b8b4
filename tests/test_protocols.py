"""The three contracts of clawloop/core/protocols.py hold for the implementations the loop uses:
isinstance (runtime_checkable) on real objects, and each method's parameters as the protocol has them."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from scripted_policy import ScriptedPolicy

from clawloop.core import protocols
from clawloop.core.agent.oracle import SIMPLE_AGENTS, noop_agent, run_oracle
from clawloop.core.protocols import Agent, Environment, Policy
from clawloop.core.tasks.environment import TaskEnvironment
from clawloop.core.tasks.task import FileSpec, Task, Verifier
from clawloop.policy import types
from clawloop.policy.hf import HFPolicy
from clawloop.policy.llamacpp import LlamaCppPolicy
from clawloop.policy.openai import OpenAIPolicy
from clawloop.policy.vllm import VLLMPolicy


def params(fn: object) -> list[tuple[str, object]]:
    """(name, kind) of a callable's parameters, `self` left out."""
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values() if p.name != "self"]  # type: ignore[arg-type]


def methods(proto: type) -> list[str]:
    return [n for n, v in vars(proto).items() if callable(v) and not n.startswith("_")]


def test_the_three_contracts_live_in_one_module_on_one_screen() -> None:
    assert protocols.__all__ == ["Agent", "Environment", "Policy"]
    assert protocols.Policy is types.Policy  # one definition, shown beside the other two
    assert len(Path(protocols.__file__).read_text().splitlines()) <= 80


@pytest.mark.parametrize("backend", [HFPolicy, VLLMPolicy, LlamaCppPolicy, OpenAIPolicy, ScriptedPolicy])
def test_policy_backends_generate_as_the_protocol_says(backend: type) -> None:
    assert params(backend.generate) == params(Policy.generate)
    assert "self.policy_id =" in inspect.getsource(backend.__init__)


def test_a_policy_is_a_policy() -> None:
    assert isinstance(ScriptedPolicy(["x"]), Policy)
    policy = OpenAIPolicy("some-model")  # no request until generate
    try:
        assert isinstance(policy, Policy)
    finally:
        policy.close()


def test_task_environment_is_an_environment(backend: str) -> None:
    task = Task(instruction="x", verifier=Verifier(files={"test.sh": FileSpec(content="exit 0")}))
    for name in methods(Environment):
        assert params(getattr(TaskEnvironment, name)) == params(getattr(Environment, name)), name
    with TaskEnvironment(task, backend) as env:  # open: its `sandbox` property answers
        assert isinstance(env, Environment)


def test_scripted_agents_are_agents() -> None:
    assert {"oracle": run_oracle, "noop": noop_agent} == SIMPLE_AGENTS
    for agent in SIMPLE_AGENTS.values():
        assert isinstance(agent, Agent)
        assert [k for _, k in params(agent)] == [inspect.Parameter.POSITIONAL_OR_KEYWORD]
