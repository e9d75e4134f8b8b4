"""Breaking the judge must not beat failing: a policy trained on GRPO's reward (clawloop.phases.train.grpo)
that makes its verifier error out gets 0, not a masked row.

Masked rows sit out of the group baseline while plain failures are pushed down, so each attack
below, if masked, would be a direction a policy drifts towards. Each is first checked live (the
verifier really cannot judge the workspace), then its reward must be 0.0. Errors the agent cannot
have caused (setup, a verifier error before its first command) stay masked."""

from __future__ import annotations

import orjson
import pytest

from clawloop.core.agent.harness import initial_messages
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.phases.train.grpo import environment_factory

TEST_SH = ('if [ "$(cat /workspace/a.txt 2>/dev/null)" = "alpha" ]; then echo 1; else echo 0; fi '
           '> /logs/verifier/reward.txt')
ATTACKS = {
    "verifier logs replaced by a link": "rm -rf /logs/verifier && ln -s /tmp /logs/verifier",
    # (the agent's /etc is no longer read by a verifier: its trusted root shows /etc as built)
    "/ bloated past the trusted root's cap": "cd / && mkdir $(seq -f 'bloat%g' 257)",
}


def task(test_sh: str = TEST_SH, **kw: object) -> Task:
    return Task(instruction="Write alpha into a.txt.", skill="files", level=1,
                verifier=Verifier(files={"test.sh": FileSpec(content=test_sh)}),
                solution=Solution(steps=["echo alpha > a.txt"]), **kw)


def row(t: Task) -> dict[str, object]:
    return {"prompt": initial_messages(t), "task": orjson.dumps(t.to_json()).decode()}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_breaking_the_verifier_scores_zero(attack: str) -> None:
    env = environment_factory("bwrap")()
    env.reset(**row(task()))
    assert env.bash(ATTACKS[attack]).endswith("[exit code 0]")
    assert env.get_reward() == 0.0
    ep = env.episode
    assert ep is not None and ep.outcome == "error" and ep.error_phase == "verifier", ep.reason  # live: it broke
    assert ep.reward is None and "SandboxError" in (ep.reason or "")


def test_what_the_agent_cannot_cause_stays_masked() -> None:
    env_cls = environment_factory("bwrap")
    env = env_cls()
    env.reset(**row(task(setup=["exit 9"])))
    assert env.get_reward() is None and env.episode is not None and env.episode.error_phase == "setup"
    env.reset(**row(task(test_sh="echo no reward file")))
    env.submit()
    assert env.get_reward() is None  # the verifier's own fault: no command ran
    env.reset(**row(task()))
    env.bash("echo alpha > a.txt")
    assert env.get_reward() == 1.0
    assert dict(env_cls.stats) == {"error": 2, "passed": 1}
