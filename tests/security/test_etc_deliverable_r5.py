"""An /etc edit can be a task's deliverable, and the /etc hacks stay closed (#75 D2).

The verifier's /etc is the image's as built (frozen after setup), so that its own tools never read
the agent's configuration. A task that asks for a sudoers rule or a user (a public Harbor task
checks /etc/sudoers.d) then failed its reference. Now the agent's versions of the entries tasks
deliver (`sandbox._trusted.DELIVERABLE_ETC`) show over the frozen /etc, and nothing else does:
an agent's /etc/ld.so.preload or /etc/magic is still not the verifier's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clawloop.core.agent.oracle import run_episode
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from sandbox import _trusted

from .test_reward_hacks import SCORE

SUDOERS_TEST = ("#!/bin/bash\nmkdir -p /logs/verifier\n"
                "if grep -qx 'deploy ALL=(root) NOPASSWD: /usr/bin/true' /etc/sudoers.d/deploy "
                "&& grep -q '^deploy:' /etc/passwd; "
                f"{SCORE}\n")
DELIVER = ["mkdir -p /etc/sudoers.d",
           "echo 'deploy ALL=(root) NOPASSWD: /usr/bin/true' > /etc/sudoers.d/deploy",
           "echo 'deploy:x:1001:1001::/home/deploy:/bin/bash' >> /etc/passwd"]


@pytest.fixture
def backend(episode_backend: str) -> str:
    return episode_backend


def sudoers_task() -> Task:
    return Task(instruction="Let user deploy run /usr/bin/true as root without a password.",
                verifier=Verifier(files={"test.sh": FileSpec.of(SUDOERS_TEST, 0o755)}),
                solution=Solution(steps=DELIVER))


def test_an_etc_deliverable_passes_its_reference_and_noop_fails(backend: str) -> None:
    task = sudoers_task()
    oracle, noop = run_episode(task, "oracle", backend), run_episode(task, "noop", backend)
    assert (oracle.outcome, noop.outcome) == ("passed", "failed"), (oracle, noop)


def test_only_deliverables_are_carried_over(tmp_path: Path) -> None:
    frozen, agent = tmp_path / "frozen", tmp_path / "agent"
    for d in (frozen, agent):
        d.mkdir()
        (d / "passwd").write_text("root:x:0:0::/root:/bin/bash\n")
        (d / "magic").write_text("image\n")
    assert not _trusted.verifier_etc(agent, frozen, tmp_path / "none")  # nothing changed: frozen as is
    (agent / "magic").write_text("agent\n")
    (agent / "ld.so.preload").write_text("/workspace/evil.so\n")
    assert not _trusted.verifier_etc(agent, frozen, tmp_path / "none")
    (agent / "sudoers.d").mkdir()
    (agent / "sudoers.d" / "deploy").write_text("deploy ALL=(ALL) ALL\n")
    (agent / "cron.d").symlink_to("/workspace/cron")
    (frozen / "group").write_text("root:x:0:\n")  # the agent deleted it
    assert _trusted.verifier_etc(agent, frozen, tmp_path / "merged")
    merged = tmp_path / "merged"
    assert (merged / "sudoers.d" / "deploy").read_text() == "deploy ALL=(ALL) ALL\n"
    assert (merged / "magic").read_text() == "image\n" and not (merged / "ld.so.preload").exists()
    assert (merged / "cron.d").is_symlink() and not (merged / "group").exists()
