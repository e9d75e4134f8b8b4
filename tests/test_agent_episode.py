"""One episode's lifecycle (clawloop.core.agent.episode): begin → step … → conclude, trouble as outcomes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clawloop.core.agent import episode as episode_mod
from clawloop.core.agent.episode import Episode, failure_reason
from clawloop.core.agent.harness import HarnessConfig
from clawloop.core.tasks.environment import TaskEnvironment
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.core.tasks.verifier import Verdict
from clawloop.errors import ClawloopError
from clawloop.policy.types import Generation
from sandbox.base import ExecResult, SandboxConfig


class FakeSandbox:
    def __init__(self) -> None:
        self.config = SandboxConfig()
        self.closed = False

    def exec(self, command: str, timeout: float = 60.0, **kw: Any) -> ExecResult:
        if command == "explode":
            raise RuntimeError("sandbox died")
        return ExecResult(0, f"ran {command}\n", False, 0.001)

    def close(self) -> None:
        self.closed = True


class FakeEnvironment(TaskEnvironment):
    """TaskEnvironment on a FakeSandbox; the instruction scripts setup and verifier trouble."""

    def open(self) -> FakeEnvironment:
        self._sb = self._sb or FakeSandbox()  # type: ignore[assignment]
        return self

    def prepare(self) -> None:
        if "badsetup" in self.task.instruction:
            raise RuntimeError("setup exploded")

    def verify(self, messages: list[dict[str, Any]] | None = None) -> Verdict:
        if "crash" in self.task.instruction:
            raise ValueError("verifier crashed")
        ok = any(c.startswith("echo") for c, _ in self.steps)
        return Verdict("passed" if ok else "failed", 1.0 if ok else 0.0, None, "out")


@pytest.fixture(autouse=True)
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(episode_mod, "TaskEnvironment", FakeEnvironment)


def task(instruction: str = "write it", **kw: Any) -> Task:
    return Task(instruction=instruction, verifier=Verifier(files={"test.sh": FileSpec(content="x")}), **kw)


def reply(name: str, **arguments: Any) -> Generation:
    body = json.dumps({"name": name, "arguments": arguments})
    return Generation(text=f"<tool_call>\n{body}\n</tool_call>", prompt_tokens=3, completion_tokens=2)


def test_a_model_episode_reads_top_to_bottom() -> None:
    ep = Episode(task(), "fake", harness=HarnessConfig())
    assert ep.begin() and ep.wants_reply()
    assert ep.step(reply("bash", command="echo hi")) == "echo hi"
    assert ep.state is not None and ep.state.messages[-1]["content"] == "ran echo hi\n[exit code 0]"
    assert ep.step(reply("submit")) is None and ep.over and not ep.wants_reply()
    assert ep.conclude() == "passed" and (ep.reward, ep.reason) == (1.0, None)
    assert ep.verdict is not None and ep.verdict.output == "out"
    assert ep.env is not None and ep.env._sb is None  # closed


def test_skips_and_setup_errors_end_the_episode_at_begin() -> None:
    image = Episode(task(needs_image="python:3.12 with gcc"), "bwrap")
    assert not image.begin() and image.over
    assert image.conclude() == "skipped" and "Docker image" in (image.reason or "")
    nosol = Episode(task(), "fake", needs_solution=True)
    assert not nosol.begin() and (nosol.outcome, nosol.reason) == ("skipped", "no reference solution")
    assert Episode(task(solution=Solution(steps=["true"])), "fake", needs_solution=True).begin()
    broken = Episode(task("badsetup"), "fake", harness=HarnessConfig())
    assert not broken.begin() and broken.state is None
    assert broken.conclude() == "error" and broken.reason == "setup: RuntimeError: setup exploded"


def test_sandbox_policy_and_verifier_breakage_are_errors() -> None:
    ep = Episode(task(), "fake", harness=HarnessConfig())
    ep.begin()
    ep.step(reply("bash", command="explode"))
    assert ep.over and ep.state is not None and ep.state.termination == "error"
    assert ep.conclude() == "error" and ep.reason == "sandbox: RuntimeError: sandbox died" and ep.reward is None
    policy = Episode(task(), "fake", harness=HarnessConfig())
    policy.begin()
    policy.fail("policy", ConnectionError("endpoint down"))
    assert policy.conclude() == "error" and policy.state is not None and policy.state.error == policy.reason
    crash = Episode(task("crash"), "fake", harness=HarnessConfig())
    crash.begin()
    crash.step(reply("submit"))
    assert crash.conclude() == "error" and crash.reason == "verifier: ValueError: verifier crashed"
    assert crash.state is not None and crash.state.termination == "submit"
    assert failure_reason("setup", RuntimeError("x" * 900)) == "setup: " + ("RuntimeError: " + "x" * 900)[:500]


def test_a_scripted_agent_acts_on_the_environment() -> None:
    ep = Episode(task(), "fake")
    assert ep.begin() and ep.state is None and ep.over  # no harness: no model turns
    ep.act(lambda env: [env.exec("echo done")])
    assert ep.conclude() == "passed"
    troubled = Episode(task(), "fake")
    troubled.begin()
    troubled.act(lambda env: (_ for _ in ()).throw(ClawloopError("no mount")))
    assert troubled.conclude() == "error" and troubled.reason == "agent: ClawloopError: no mount"
    buggy = Episode(task(), "fake")
    buggy.begin()
    with pytest.raises(AssertionError):  # a bug of the agent (a test's check) is not task trouble
        buggy.act(lambda env: (_ for _ in ()).throw(AssertionError("the attack is not live")))
    buggy.close()


def test_a_run_command_failure_leaves_the_sandbox_unavailable() -> None:
    ep = Episode(task(), "fake")
    ep.begin()
    assert ep.run_command("ls", 5.0) is not None
    assert ep.run_command("explode", 5.0) is None and ep.outcome == "error"
    assert ep.conclude() == "error"
