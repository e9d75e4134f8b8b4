"""Answer tasks (clawloop.core.tasks.answer): the agent prints the answer, its last command's output is
graded. Built by the synthesizer's answer form, validated agent-free, replayed as references that end
on the printing command, and attacked as a hostile agent would: by writing the answer file the
verifier reads, or by printing the answer and then something else."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import pytest

import sandbox
from clawloop.config.knobs import NO_KNOBS
from clawloop.config.synthesis import Forms
from clawloop.core.tasks import answer
from clawloop.core.tasks.adapters import adapter_for
from clawloop.core.tasks.environment import TaskEnvironment
from clawloop.core.tasks.harbor_export import export_harbor_task
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError
from clawloop.phases.synthesize.builder import ANSWER_PREFIX
from clawloop.phases.synthesize.procedural.generate import synthesize
from clawloop.phases.synthesize.skills import families, family
from clawloop.phases.synthesize.steering import Plan
from clawloop.phases.synthesize.templates import templates
from clawloop.phases.train.reference import ANSWER_THOUGHT, CHECK_THOUGHT, plan_calls, reference_episode
from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool

needs_bwrap = pytest.mark.skipif(sandbox.unavailable_reason("bwrap") is not None,
                                 reason=str(sandbox.unavailable_reason("bwrap")))


def _count_task() -> Task:
    """sort_count level 1 drawn until it is the answer form of count_lines (deterministic)."""
    for i in range(200):
        t = family("sort_count").generate(1, random.Random(f"count-{i}"), NO_KNOBS, random.Random(i))
        if answer.is_answer_task(t) and t.solution is not None and t.solution.steps[-1].startswith("wc -l"):
            return t
    raise AssertionError("no count_lines answer task in 200 draws")


def _pool(share: float) -> list[Task]:
    cells = {(s, lvl): 3 for s in families() for lvl in range(1, 6)}
    return synthesize(Plan(quotas=cells), 0, 1, forms=Forms(answer=share))


def test_answer_form_changes_only_the_tasks_that_take_it() -> None:
    with_answers, files_only = _pool(0.5), _pool(0.0)
    answered = [t for t in with_answers if answer.is_answer_task(t)]
    # about half of the ~44% of draws that allow the form; every level has some
    assert 0.12 * len(with_answers) < len(answered) < 0.35 * len(with_answers)
    assert {t.level for t in answered} == {1, 2, 3, 4, 5}
    for a, b in zip(with_answers, files_only, strict=True):
        if not answer.is_answer_task(a):
            assert a.id == b.id  # the main rng stream is untouched: pools do not move
    assert not any(answer.is_answer_task(t) for t in files_only)


def _twins(share: float = 1.0, **forms: float) -> list[Task]:
    cells = {(s, lvl): 4 for s in families() for lvl in (1, 2, 3)}
    return synthesize(Plan(quotas=cells), 0, 1, forms=Forms(answer=0.5, twins=share, **forms))


def test_a_twin_asks_the_same_draw_for_its_file_in_the_next_slot() -> None:
    """synthesis.twins: an answer-form task is followed by the same workspace asked for the file,
    so only the instruction says which form is wanted; the cells keep their sizes."""
    pool, single = _twins(1.0, conversational=0.5, elsewhere=0.25), _twins(0.0, conversational=0.5, elsewhere=0.25)
    assert Counter((t.skill, t.level) for t in pool) == Counter((t.skill, t.level) for t in single)
    twins = []
    for a, b in zip(pool, pool[1:], strict=False):
        if not answer.is_answer_task(a) or (a.skill, a.level) != (b.skill, b.level):
            continue
        assert not answer.is_answer_task(b) and b.files == a.files and b.workdir == a.workdir
        assert b.provenance.seed == a.provenance.seed and b.instruction != a.instruction
        gone = next(c["path"] for c in json.loads(a.verifier.files["spec.json"].content)["checks"]
                    if c["t"] == "absent")
        out = gone.rsplit("/", 1)[-1]
        assert out in b.instruction and out not in a.instruction
        assert b.solution.steps[:-1] == a.solution.steps[:-1]
        assert b.solution.steps[-1].startswith(a.solution.steps[-1]) and out in b.solution.steps[-1]
        twins.append(b.id)
    answered = sum(answer.is_answer_task(t) for t in pool)
    assert len(twins) >= 0.8 * answered > 10  # all but an answer task in a cell's last slot
    # a twin takes the slot of the draw after it; every other task is the draw it was without twins
    assert {t.id for t in pool} - set(twins) <= {t.id for t in single}
    assert _twins(0.0) == synthesize(Plan(quotas={(s, lvl): 4 for s in families() for lvl in (1, 2, 3)}), 0, 1,
                                     forms=Forms(answer=0.5))


def test_fresh_instances_draw_no_twins() -> None:
    from clawloop.phases.synthesize.fresh import fresh_tasks

    pool = _twins(1.0)
    with_twins = fresh_tasks(pool, 3, seed=0, iteration=1, forms=Forms(answer=0.5, twins=1.0))
    assert with_twins == fresh_tasks(pool, 3, seed=0, iteration=1, forms=Forms(answer=0.5))


def test_forms_are_shares() -> None:
    with pytest.raises(ValueError, match="twins"):
        Forms(twins=1.5)
    from clawloop.config.synthesis import SynthesisParams

    assert SynthesisParams(twins=0.5).forms().twins == 0.5


def test_answer_task_shape() -> None:
    t = _count_task()
    assert "answer" in t.tags and adapter_for(t).name == "answer"
    checks = json.loads(t.verifier.files["spec.json"].content)["checks"]
    kinds = [c["t"] for c in checks]
    assert "absent" in kinds and any(c.get("cmd") == "cat /tests/answer.txt" for c in checks)
    gone = next(c["path"] for c in checks if c["t"] == "absent")
    assert gone.rsplit("/", 1)[-1] not in t.instruction  # the file it used to ask for is not named
    assert ">" not in t.solution.steps[-1]  # the last step prints, it writes nothing
    for fam in families():
        for key, options in templates(fam).items():
            if key.startswith(ANSWER_PREFIX):
                assert key[len(ANSWER_PREFIX):] in templates(fam), f"{fam}.{key} answers no intent"
                # a question or a request to print, naming no file to write
                assert all("{out}" not in o and not re.search(r"(?i)\b(write|save)\b", o) for o in options), \
                    f"{fam}.{key}"


def test_plan_calls_end_on_the_answer() -> None:
    steps = ["ls data", "grep -c x data/a.log"]
    calls = plan_calls(steps, "process", 8, answer=True)
    assert calls[-1][:2] == (ANSWER_THOUGHT, steps[-1])
    assert [c.command for c in calls] == ["ls -la", *steps]
    assert plan_calls(steps, "process", 8)[-1][0] == CHECK_THOUGHT  # a file task checks last


def test_harbor_cannot_carry_an_answer_task(tmp_path) -> None:
    with pytest.raises(ClawloopError, match="answer adapter"):
        export_harbor_task(_count_task(), tmp_path / "t")
    assert not (tmp_path / "t").exists()


@needs_bwrap
def test_both_twins_pass_agent_free_validation() -> None:
    pool = _twins(1.0)
    pairs = [(a, b) for a, b in zip(pool, pool[1:], strict=False) if answer.is_answer_task(a) and b.files == a.files]
    tasks = [t for pair in pairs[::4] for t in pair]
    kept, report = validate_pool(tasks, "bwrap", jobs=2, params=AgentFreeParams(determinism=False,
                                                                                 heldout_threshold=1.0))
    # a pair whose instructions and files are nearly the same text is one near-duplicate task
    assert set(report["rejected"]) <= {"near_duplicate"}, report["examples"]
    assert len(kept) >= len(tasks) - len(pairs[::4]) // 3


@needs_bwrap
def test_answer_tasks_pass_agent_free_validation() -> None:
    tasks = [t for t in _pool(1.0) if answer.is_answer_task(t)][::3]
    kept, report = validate_pool(tasks, "bwrap", jobs=2, params=AgentFreeParams(determinism=False,
                                                                                 heldout_threshold=1.0))
    assert report["rejected"] == {}, report["examples"]
    assert len(kept) == len(tasks)


def _run(task: Task, commands: list[str]) -> bool:
    with TaskEnvironment(task, "bwrap") as env:
        env.prepare()
        for c in commands:
            env.exec(c)
        return env.verify().passed


@needs_bwrap
def test_the_last_output_is_graded() -> None:
    t = _count_task()
    f = next(p for p in t.files if p.endswith(".txt") or p.endswith(".md") or p.endswith(".log"))
    n = len(t.files[f].data().decode().splitlines())
    assert _run(t, [f"wc -l < '{f}'"])
    assert _run(t, ["ls", f"echo {n}"])
    assert not _run(t, [f"echo {n}", "ls"])  # printed, then ended on something else
    assert not _run(t, [f"echo {n + 1}"])
    assert not _run(t, [])  # ran nothing: printed nothing


@needs_bwrap
def test_hostile_agent_cannot_plant_its_answer() -> None:
    t = _count_task()
    f = next(p for p in t.files if p.endswith((".txt", ".md", ".log")))
    n = len(t.files[f].data().decode().splitlines())
    # the verifier reads /tests/answer.txt: written by the host, in a /tests the agent never sees
    assert not _run(t, [f"mkdir -p /tests 2>/dev/null; echo {n} > /tests/answer.txt; echo planted",
                        "echo wrong"])
    # a file answer where a printed one was asked: the file must not exist, the output is wrong
    out = "/workspace/answer.txt"
    assert not _run(t, [f"wc -l < '{f}' > {out}", f"cat {out} >/dev/null"])
    # a task that lost its record (a pool edited by hand) fails its answer check, it never passes
    stripped = t.model_copy(update={"metadata": {}})
    assert adapter_for(stripped).name == "standard"
    assert not _run(stripped, [f"echo {n}"])


@needs_bwrap
def test_reference_replay_of_an_answer_task_passes_and_ends_on_the_answer() -> None:
    t = _count_task()
    r = reference_episode(t, "bwrap", shape="process")
    assert r.outcome == "passed", r.reason
    calls = [m for m in r.conversation.messages if m["role"] == "assistant"]
    assert ANSWER_THOUGHT in str(calls[-2]) and "wc -l" in str(calls[-2])  # then submit


def test_cli_synth_answer_share(tmp_path) -> None:
    from typer.testing import CliRunner

    from clawloop.cli import app
    from clawloop.core.tasks.pool import read_pool

    counts = {}
    for share in ("0", "1"):
        out = tmp_path / f"pool-{share}.jsonl"
        res = CliRunner().invoke(app, ["tasks", "synth", "--n", "40", "--seed", "3", "--answer", share,
                                       "--out", str(out)])
        assert res.exit_code == 0, res.output
        counts[share] = sum(answer.is_answer_task(t) for t in read_pool(out))
    assert counts["0"] == 0 and counts["1"] > 8


@needs_bwrap
def test_hostile_agent_cannot_shim_the_command_that_reads_the_answer() -> None:
    """The check runs `cat /tests/answer.txt` in the verifier's world: a `cat` the agent planted
    on a PATH it could write (its home, the workspace, /usr/local/bin) must not answer for it."""
    t = _count_task()
    f = next(p for p in t.files if p.endswith((".txt", ".md", ".log")))
    n = len(t.files[f].data().decode().splitlines())
    shim = f"printf '#!/bin/sh\\necho {n}\\n' > {{d}}/cat && chmod +x {{d}}/cat"
    assert not _run(t, [f"mkdir -p ~/bin && {shim.format(d='~/bin')}; {shim.format(d='/usr/local/bin')}; "
                        f"{shim.format(d='/workspace')}; export PATH=/workspace:$PATH; echo wrong"])
    assert _run(t, [f"{shim.format(d='/workspace')}; echo {n}"])  # the planted files alone change nothing
