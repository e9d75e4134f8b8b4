"""Tasks whose shell starts in `/`, away from their files (synthesis.elsewhere), as InterCode-Bash's
agent starts: the instruction says where the files are, the reference changes into that folder,
validation keeps them (oracle passes, no-op fails) and the process-shaped replay looks and checks
there."""

from __future__ import annotations

import random
import re

import pytest

import sandbox
from clawloop.config.knobs import NO_KNOBS
from clawloop.config.synthesis import Forms
from clawloop.core.agent.harness import HarnessConfig
from clawloop.core.tasks.task import Task
from clawloop.phases.synthesize.procedural.generate import synthesize
from clawloop.phases.synthesize.procedural.register import start_elsewhere
from clawloop.phases.synthesize.skills import families, family
from clawloop.phases.synthesize.steering import Plan
from clawloop.phases.train import data as tdata
from clawloop.phases.train import reference
from clawloop.phases.train.reference import (
    CHECK_THOUGHT,
    FIX_THOUGHT,
    Call,
    data_dir,
    plan_calls,
    reference_episode,
    reference_trajectories,
    relative_mistake,
    takes_mistake,
)
from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool

needs_bwrap = pytest.mark.skipif(sandbox.unavailable_reason("bwrap") is not None,
                                 reason=str(sandbox.unavailable_reason("bwrap")))


def _pool(share: float) -> list[Task]:
    cells = {(s, lvl): 2 for s in families() for lvl in range(1, 6)}
    return synthesize(Plan(quotas=cells), 0, 1, forms=Forms(answer=0.5, elsewhere=share))


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
    assert calls[0].command == "ls -la /workspace"
    assert calls[-1][:2] == (CHECK_THOUGHT, "cd /workspace && head -n 20 -- b.txt")


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


# --- the relative-path mistake and its fix (train.data.reference_mistakes) -------------------------

def test_the_mistake_is_the_step_run_where_the_shell_starts_and_only_where_that_is_safe() -> None:
    safe = {"cd /workspace && sort a.txt": "sort a.txt", "cd /workspace && mv a.md b.md": "mv a.md b.md",
            "cd /workspace && grep -c x app.log": "grep -c x app.log",
            "cd /workspace && sed -i '/^$/d' notes.md": "sed -i '/^$/d' notes.md",
            "cd /workspace && find logs -name '*.tmp' -delete": "find logs -name '*.tmp' -delete"}
    for step, wrong in safe.items():
        assert relative_mistake(step) == wrong, step
    # would write somewhere else (mkdir, tar -c, a redirection), names no relative file, or is no cd'd step
    for step in ["cd /workspace && mkdir -p d", "cd /workspace && tar -czf a.tgz d", "cd /workspace && sort a > b",
                 "cd /workspace && grep x a | wc -l", "cd /workspace && grep -c x", "cd /workspace && cat /etc/hosts",
                 "sort a.txt", "cd /workspace && ./run.sh", "cd /workspace && wc -l < a.txt"]:
        assert relative_mistake(step) is None, step


def test_plan_puts_the_untrained_mistake_before_its_fix() -> None:
    steps = ["cd /workspace && sort a.txt > b.txt"]
    assert plan_calls(steps, "process", 8, data="/workspace", mistake=True) == plan_calls(steps, "process", 8,
                                                                                           data="/workspace")
    steps = ["cd /workspace && mv a.md b.md"]
    calls = plan_calls(steps, "process", 8, data="/workspace", mistake=True)
    assert calls == [Call(reference.INSPECT[0], "ls -la /workspace"), Call("", "mv a.md b.md", trained=False),
                     Call(FIX_THOUGHT, steps[0]), Call(CHECK_THOUGHT, "cd /workspace && ls -la -- b.md")]
    assert plan_calls(steps, "process", 4, data="/workspace", mistake=True)[1].trained  # no turn to spare
    assert plan_calls(steps, "process", 8, mistake=True)[1].trained  # the shell starts beside the files
    answer = plan_calls(["cd /workspace && grep -c x app.log"], "process", 8, data="/workspace", mistake=True,
                        answer=True)
    assert [c.trained for c in answer] == [True, False, True] and answer[-1].thought == FIX_THOUGHT
    assert 400 < sum(takes_mistake(f"t{i}", 0.5) for i in range(1000)) < 600
    assert not any(takes_mistake(f"t{i}", 0.0) for i in range(100))


@needs_bwrap
def test_replayed_mistakes_fail_for_real_and_are_kept_out_of_the_loss() -> None:
    tasks = [t for t in _pool(1.0) if "elsewhere" in t.tags and relative_mistake(t.solution.steps[0])][:6]
    assert len(tasks) >= 4
    roomy = HarnessConfig(max_turns=None)  # the task's turn limit: a planned mistake needs a turn to spare
    kept, results = reference_trajectories(tasks, "bwrap", harness_config=roomy, workers=2, shape="process",
                                           mistakes=1.0)
    assert [r.outcome for r in results] == ["passed"] * len(tasks), [r.reason for r in results]
    for conv in kept:
        m = conv.messages
        wrong = next(i for i, x in enumerate(m) if x.get("train") is False)
        assert tdata.has_untrained_turn(m) and sum(x.get("train") is False for x in m) == 1
        error = m[wrong + 1]["content"]
        assert "No such file" in error and not error.endswith("[exit code 0]"), error
        assert m[wrong + 2]["content"].startswith(FIX_THOUGHT)
        assert tdata.to_dataset([conv])[0]["messages"][wrong]["train"] is False  # survives the dataset
    plain, _ = reference_trajectories(tasks, "bwrap", harness_config=roomy, workers=2, shape="process")
    assert not any(tdata.has_untrained_turn(c.messages) for c in plain)


@needs_bwrap
def test_a_planned_mistake_that_succeeds_is_not_replayed_as_a_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """The error after the mistake must be real: a mistake that did not fail (the file was there after
    all) would teach a fix of nothing, so that replay is skipped."""
    task = next(t for t in _pool(1.0) if "elsewhere" in t.tags and relative_mistake(t.solution.steps[0]))
    monkeypatch.setattr(reference, "relative_mistake", lambda step: "ls /workspace")
    r = reference_episode(task, "bwrap", shape="process", mistakes=1.0)
    assert r.outcome == "skipped" and r.conversation is None, r.reason


def test_a_template_that_cannot_mask_the_mistake_is_detected(tiny_model) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert tdata.masks_untrained_turns(tok)
    tok.chat_template = tok.chat_template.replace("message.train is sameas false", "false")
    assert not tdata.masks_untrained_turns(tok)
