"""Instructions written at length, as shell-core's are (synthesis.detailed, register.in_detail)."""

from __future__ import annotations

import random

import pytest

import sandbox
from clawloop.config.knobs import NO_KNOBS
from clawloop.config.synthesis import Forms, SynthesisParams
from clawloop.core.tasks.task import Task
from clawloop.phases.synthesize.pool import build_pool
from clawloop.phases.synthesize.procedural.generate import synthesize
from clawloop.phases.synthesize.procedural.register import DETAIL_CONTEXTS, in_detail
from clawloop.phases.synthesize.skills import families, family
from clawloop.phases.synthesize.steering import Plan
from clawloop.phases.train.reference import RESTATE, reference_episode, restatement
from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool

needs_bwrap = pytest.mark.skipif(sandbox.unavailable_reason("bwrap") is not None,
                                 reason=str(sandbox.unavailable_reason("bwrap")))


CELLS = {(s, lvl): 2 for s in families() for lvl in range(1, 5)}


def _pool(share: float) -> list[Task]:
    return synthesize(Plan(quotas=CELLS), 0, 1,
                      forms=Forms(conversational=0.5, answer=0.5, elsewhere=0.25, detailed=share))


def test_in_detail_wraps_the_request_in_context_over_lines_and_keeps_the_task() -> None:
    t = family("sort_count").generate(2, random.Random("d"), NO_KNOBS)
    long = in_detail(t, random.Random(3))
    assert "detailed" in long.tags and long.id != t.id
    assert long.files == t.files and long.verifier == t.verifier and long.solution == t.solution
    assert " ".join(long.instruction.split()).find(" ".join(t.instruction.split())) > 0  # context comes first
    assert any(long.instruction.startswith(c.split()[0]) for c in DETAIL_CONTEXTS)
    assert long.instruction.count("\n") >= 1 and max(map(len, long.instruction.splitlines())) <= 100
    assert in_detail(long, random.Random(4)) is long  # a multi-line instruction is left as it is


def test_a_literal_is_never_broken_over_two_lines() -> None:
    words = " ".join(f"w{i}" for i in range(30))
    for literal in ("'keep these five words together'", '"keep these five words together"',
                    "`keep these five words together`"):
        t = family("sort_count").generate(1, random.Random("d"), NO_KNOBS)
        t = t.model_copy(update={"instruction": f"{words} append the line {literal} to a.txt. {words}."})
        for seed in range(20):
            assert any(literal in line for line in in_detail(t, random.Random(seed)).instruction.splitlines())


def test_share_changes_only_the_tasks_that_take_it_and_zero_changes_nothing() -> None:
    long, short = _pool(0.5), _pool(0.0)
    took = [t for t in long if "detailed" in t.tags]
    assert 0.3 * len(long) < len(took) < 0.7 * len(long)
    assert all(a.id == b.id for a, b in zip(long, short, strict=True) if "detailed" not in a.tags)
    plain = synthesize(Plan(quotas=CELLS), 0, 1, forms=Forms(conversational=0.5, answer=0.5, elsewhere=0.25))
    assert [t.id for t in short] == [t.id for t in plain]  # the default is 0


def test_the_synthesis_param_reaches_the_pool() -> None:
    params = SynthesisParams(tasks_per_iteration=24, detailed=1.0)
    pool = build_pool(params, 1, None, None, lambda _: pytest.fail("procedural synthesis loads no policy"))
    assert pool.tasks and all("detailed" in t.tags for t in pool.tasks)


def test_the_restatement_of_a_long_instruction_is_one_line_and_names_the_request() -> None:
    for t in [t for t in _pool(1.0) if len(t.instruction) > 240][:20]:
        said = restatement(t.instruction)
        assert "\n" not in said and len(said) <= len(RESTATE.format("")) + 240
        assert said.removeprefix(RESTATE.format("")) not in DETAIL_CONTEXTS  # more than the context sentence


@needs_bwrap
def test_detailed_tasks_validate_and_replay() -> None:
    tasks = [t for t in _pool(1.0) if "detailed" in t.tags][::4]
    assert len(tasks) >= 20
    kept, report = validate_pool(tasks, "bwrap", jobs=2,
                                 params=AgentFreeParams(determinism=False, heldout_threshold=1.0))
    assert report["rejected"] == {}, report["examples"]
    r = reference_episode(kept[0], "bwrap", shape="process", restate=True)
    assert r.outcome == "passed", r.reason
    assert restatement(kept[0].instruction) in str(r.conversation.messages)
