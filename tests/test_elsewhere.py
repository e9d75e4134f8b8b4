"""Tasks whose shell starts in `/`, away from their files (synthesis.elsewhere), as InterCode-Bash's
agent starts: the instruction says where the files are, the reference changes into that folder,
validation keeps them (oracle passes, no-op fails) and the process-shaped replay looks and checks
there."""

from __future__ import annotations

import random
import re

import pytest

import sandbox
from clawloop.synthesis.knobs import NO_KNOBS
from clawloop.synthesis.procedural.generate import synthesize
from clawloop.synthesis.procedural.register import start_elsewhere
from clawloop.synthesis.skills import families, family
from clawloop.synthesis.steering import Plan
from clawloop.tasks.task import Task
from clawloop.training.reference import CHECK_THOUGHT, data_dir, plan_calls, reference_episode
from clawloop.validation.agent_free import AgentFreeParams, validate_pool

needs_bwrap = pytest.mark.skipif(sandbox.unavailable_reason("bwrap") is not None,
                                 reason=str(sandbox.unavailable_reason("bwrap")))


def _pool(share: float) -> list[Task]:
    cells = {(s, lvl): 2 for s in families() for lvl in range(1, 6)}
    return synthesize(Plan(quotas=cells), 0, 1, answer=0.5, elsewhere=share)


def test_start_elsewhere_moves_the_shell_and_says_where_the_files_are() -> None:
    t = family("sort_count").generate(1, random.Random("e"), NO_KNOBS)
    moved = start_elsewhere(t, random.Random(0))
    assert moved.workdir == "/" and "elsewhere" in moved.tags
    assert "/workspace" in moved.instruction and moved.instruction.startswith(t.instruction)
    assert moved.solution.steps == [f"cd /workspace && {s}" for s in t.solution.steps]
    assert moved.files == t.files and moved.verifier == t.verifier and moved.id != t.id
    assert data_dir(moved) == "/workspace" and data_dir(t) is None


def test_a_task_about_the_shells_own_directory_stays() -> None:
    for i in range(100):
        t = family("env_processes").generate(1, random.Random(f"pwd-{i}"), NO_KNOBS)
        if any(re.search(r"\bpwd\b", s) for s in t.solution.steps):
            assert start_elsewhere(t, random.Random(0)) is t
            return
    pytest.fail("no pwd task in 100 draws")


def test_share_changes_only_the_tasks_that_take_it() -> None:
    moved, home = _pool(0.25), _pool(0.0)
    took = [t for t in moved if "elsewhere" in t.tags]
    assert 0.1 * len(moved) < len(took) < 0.4 * len(moved)
    assert all(a.id == b.id for a, b in zip(moved, home, strict=True) if "elsewhere" not in a.tags)


def test_process_replay_looks_and_checks_where_the_files_are() -> None:
    calls = plan_calls(["cd /workspace && sort a.txt > b.txt"], "process", 8, data="/workspace")
    assert calls[0][1] == "ls -la /workspace"
    assert calls[-1] == (CHECK_THOUGHT, "cd /workspace && head -n 20 -- b.txt")


@needs_bwrap
def test_elsewhere_tasks_validate_and_replay() -> None:
    tasks = [t for t in _pool(1.0) if "elsewhere" in t.tags][::4]
    assert len(tasks) >= 25
    kept, report = validate_pool(tasks, "bwrap", jobs=2,
                                 params=AgentFreeParams(determinism=False, heldout_threshold=1.0))
    assert report["rejected"] == {}, report["examples"]
    r = reference_episode(kept[0], "bwrap", shape="process")
    assert r.outcome == "passed", r.reason
    assert "ls -la /workspace" in str(r.conversation.messages)
