"""Agent-free checks of synthesized tasks in a real bwrap sandbox: the oracle passes, a no-op fails.

A sample: every family at two levels (rotating, so every level is covered), half of them with
knobs on. The full 2,000-task sweep is run by hand (see docs/skills.md), not here.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

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


# every breadth intent (synthesis.breadth: the programs and flags held-out suites use that the
# families' other intents never ask for), each in file and answer form where it has one
BREADTH_USES = {
    "files": {"touch", "rm -r", "md5sum", "cp -a", "uniq -d"},
    "text_search": {"grep -r", "grep -o", "grep -E"},
    "sort_count": {"uniq -d", "sort -t", "sort -k"},
    "stream_edit": {"sed -e", "tr -d", "tac", "cut -c", "paste -s"},
    "archives": {"zcat"},
    "permissions_links": {"find -perm", "stat -c"},
    "find_bulk": {"find -maxdepth", "find -not", "xargs -0", "find -print0", "basename", "dirname",
                  "sort -z", "xargs -I"},
    "pipes_redirection": {"tee", "comm -23", "comm -12", "diff"},
}


def _breadth_sample() -> list[Task]:
    """Breadth draws of every family and level that has them until each family's uses are all met."""
    spec = importlib.util.spec_from_file_location("breadth", Path(__file__).resolve().parents[1] / "benchmarks" / "breadth.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    uses = mod.uses
    out: list[Task] = []
    for fam in families().values():
        seen: set[str] = set()
        for level in sorted(fam.breadth):
            for k in range(40):
                rng, arng = random.Random(f"breadth-{fam.name}-{level}-{k}"), random.Random(k)
                task = fam.generate(level, rng, _KNOBS[k % len(_KNOBS)], arng if k % 2 else None, breadth=True)
                new = uses("\n".join(task.solution.steps)) - seen
                if new & BREADTH_USES[fam.name] or k < 2:
                    out.append(task)
                    seen |= new
        assert BREADTH_USES.get(fam.name, set()) <= seen, (fam.name, BREADTH_USES[fam.name] - seen)
    return out


def test_breadth_intents_pass_agent_free_validation() -> None:
    tasks = _breadth_sample()
    assert {t.skill for t in tasks} == set(BREADTH_USES)
    assert all("breadth" in t.tags for t in tasks) and any("answer" in t.tags for t in tasks)
    params = AgentFreeParams(determinism=False, heldout_threshold=1.0)
    kept, report = validate_pool(tasks, "bwrap", jobs=2, params=params)
    assert report["rejected"] == {}, report["examples"]
    assert len(kept) == len(tasks)
