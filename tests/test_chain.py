"""Chained tasks (clawloop/phases/synthesize/procedural/chain.py): two or three generated tasks asked
for in one request, joined only where they cannot see each other, valid as they are joined, and
replayed as references with one act per part."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

import sandbox
from clawloop.config.knobs import NO_KNOBS
from clawloop.config.synthesis import SynthesisParams
from clawloop.core.tasks.task import FileSpec, Task
from clawloop.phases.synthesize.procedural.chain import chain, compatible
from clawloop.phases.synthesize.procedural.generate import synthesize
from clawloop.phases.synthesize.skills import family
from clawloop.phases.synthesize.steering import plan

needs_bwrap = pytest.mark.skipif(sandbox.unavailable_reason("bwrap") is not None,
                                 reason=f"bwrap: {sandbox.unavailable_reason('bwrap')}")


def _task(skill: str, seed: int, level: int = 1) -> Task:
    return family(skill).generate(level, random.Random(seed), NO_KNOBS, None)


def _pool(share: float, n: int = 48) -> list[Task]:
    params = SynthesisParams(chained=share)
    return synthesize(plan(None, n, params.steering(), None), 0, 1, forms=params.forms())


def test_two_tasks_become_one_request_with_every_check_and_step() -> None:
    a, b = _task("files", 1), _task("sort_count", 2)
    joined = chain([a, b], random.Random(0))
    assert joined is not None
    assert a.instruction.strip() in joined.instruction and b.instruction.strip() in joined.instruction
    assert joined.instruction.index(a.instruction.strip()) < joined.instruction.index(b.instruction.strip())
    assert joined.solution is not None and a.solution is not None and b.solution is not None
    assert joined.solution.steps == [*a.solution.steps, *b.solution.steps]
    assert joined.files == {**a.files, **b.files}
    checks = json.loads(joined.verifier.files["spec.json"].data())["checks"]
    assert checks == [*json.loads(a.verifier.files["spec.json"].data())["checks"],
                      *json.loads(b.verifier.files["spec.json"].data())["checks"]]
    assert (joined.skill, joined.level, joined.workdir) == (a.skill, a.level, a.workdir)
    assert "chained" in joined.tags and joined.id not in (a.id, b.id)
    assert joined.metadata["chained"] == [{"skill": "files", "level": 1}, {"skill": "sort_count", "level": 1}]


def test_tasks_that_could_see_each_other_stay_apart() -> None:
    a, b = _task("files", 1), _task("sort_count", 2)
    assert compatible([a, b])
    # one names a path the other names (the same file, or a dir holding it)
    path = next(iter(a.files))
    assert not compatible([a, b.model_copy(update={"files": {**b.files, path: FileSpec(content="x\n")}})])
    parent = path.rsplit("/", 1)[0] + "/sub"
    clash = a.model_copy(update={"files": {**a.files, parent + "/f.txt": FileSpec(content="y\n")}})
    assert not compatible([clash, b.model_copy(update={"files": {**b.files, parent: FileSpec(content="z\n")}})])
    # a check on the shared folder itself sees every part's files
    spec = {"checks": [{"t": "tree", "path": a.workdir, "files": {}}]}
    whole = a.model_copy(update={"verifier": a.verifier.model_copy(update={"files": {
        **a.verifier.files, "spec.json": FileSpec(content=json.dumps(spec))}})})
    assert not compatible([whole, b])
    # another verifier, another workdir, an answer task, a literal block: not joined
    other = b.model_copy(update={"verifier": b.verifier.model_copy(update={"files": {
        **b.verifier.files, "check.py": FileSpec(content="print(1)\n")}})})
    assert not compatible([a, other])
    assert not compatible([a, b.model_copy(update={"workdir": "/srv"})])
    helper = {"fix.sh": FileSpec(content="true\n")}
    assert a.solution is not None and b.solution is not None
    assert not compatible([a.model_copy(update={"solution": a.solution.model_copy(update={"files": helper})}),
                           b.model_copy(update={"solution": b.solution.model_copy(update={"files": helper})})])
    answer = family("csv").generate(1, random.Random(3), NO_KNOBS, random.Random(0))
    assert not compatible([a, answer])
    assert chain([a, b.model_copy(update={"instruction": "Write this:\n  two lines\n"})], random.Random(0)) is None


def test_a_part_ending_mid_sentence_gets_a_line_of_its_own() -> None:
    a, b = _task("files", 1), _task("sort_count", 2)
    open_end = a.model_copy(update={"instruction": "Create a file x.txt containing the single line: floral toronto"})
    for seed in range(12):
        joined = chain([open_end, b], random.Random(seed))
        assert joined is not None and "floral toronto\n2. " in joined.instruction


def test_the_share_chains_that_many_draws_and_leaves_the_rest_as_they_were() -> None:
    plain, some = _pool(0.0), _pool(0.5)
    assert SynthesisParams(chained=0.5).forms().chained == 0.5
    assert not any("chained" in t.tags for t in plain)
    chained = [i for i, t in enumerate(some) if "chained" in t.tags]
    assert 8 <= len(chained) <= 40
    # every draw that was not chained is the same task as in the unchained pool (its own rng)
    assert [t.id for i, t in enumerate(some) if i not in chained] == [t.id for i, t in enumerate(plain)
                                                                      if i not in chained]
    assert _pool(0.5) == some  # deterministic


@needs_bwrap
def test_chained_tasks_pass_validation_and_replay_one_act_per_part() -> None:
    from clawloop.phases.train.reference import reference_trajectories
    from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool

    tasks = [t for t in _pool(1.0, 24) if "chained" in t.tags][:12]
    assert len(tasks) >= 8
    kept, report = validate_pool(tasks, "bwrap", 2, (), AgentFreeParams(heldout_threshold=1.0))
    assert len(kept) == len(tasks), report["rejected"]  # the reference passes, the no-op fails, twice alike
    convs, _ = reference_trajectories(kept[:2], "bwrap", shape="process", workers=2)
    for task, conv in zip(kept[:2], convs, strict=True):
        calls = [c["function"]["arguments"].get("command") for m in conv.messages if m["role"] == "assistant"
                 for c in m.get("tool_calls") or []]
        assert task.solution is not None
        acts = [c for c in calls if c and any(step in c for step in task.solution.steps)]
        assert len(acts) == len(task.solution.steps) >= 2, calls


def test_chaining_is_a_synthesis_param() -> None:
    assert SynthesisParams().chained == 0.0
    with pytest.raises(ValueError):
        SynthesisParams(chained=1.5)
    assert dataclasses.asdict(SynthesisParams(chained=0.25).forms())["chained"] == 0.25
