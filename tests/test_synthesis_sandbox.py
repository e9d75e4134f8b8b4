"""Agent-free checks of synthesized tasks in a real bwrap sandbox: the oracle passes, a no-op fails.

A sample: every family at two levels (rotating, so every level is covered), half of them with
knobs on. The full 2,000-task sweep is run by hand (see docs/skills.md), not here.
"""

from __future__ import annotations

import random

import pytest

import sandbox
from clawloop.config.knobs import NO_KNOBS, Knobs
from clawloop.core.tasks.task import Task
from clawloop.phases.synthesize.skills import families
from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool

pytestmark = pytest.mark.skipif(sandbox.unavailable_reason("bwrap") is not None,
                                reason=str(sandbox.unavailable_reason("bwrap")))

_KNOBS = [NO_KNOBS, Knobs(names_with_spaces=True, distractors=1),
          Knobs(loud_broken_start=True, more_steps=True)]


def _sample() -> list[Task]:
    out = []
    for i, fam in enumerate(families().values()):
        for j, level in enumerate(((i % 5) + 1, ((i + 2) % 5) + 1)):
            rng = random.Random(f"sandbox-{fam.name}-{level}")
            out.append(fam.generate(level, rng, _KNOBS[(i + j) % len(_KNOBS)]))
    return out


def test_sample_passes_agent_free_validation() -> None:
    tasks = _sample()
    assert {t.level for t in tasks} == {1, 2, 3, 4, 5}
    params = AgentFreeParams(determinism=False, heldout_threshold=1.0)
    kept, report = validate_pool(tasks, "bwrap", jobs=2, params=params)
    assert report["rejected"] == {}, report["examples"]
    assert len(kept) == len(tasks)
