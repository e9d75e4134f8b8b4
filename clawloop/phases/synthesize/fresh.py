"""Fresh held-in instances: the evidence the curriculum decides on.

After 120 SFT steps (about four epochs of its pool) the trained policy passes its own pool's tasks
because it has seen them: 87 of 96 at iteration 1, where new instances of the same cells passed 72%
at level 1 and 33% at level 2 (docs/experiments/2026-12-04-training-data-levers.md). Neither that
nor the validate stage's probe (the policy *before* training) says what the policy can do now at
the levels it trained on. `fresh_tasks` draws new instances of each skill at the highest level its
pool trained (the level a raise or a lower is decided at) from the same generators, in a seed
namespace of their own (FRESH_NAMESPACE: neither a pool's nor synth-heldout's). The synthesize
stage writes them beside the pool (FRESH_TASKS), the evaluate stage rolls the trained policy out
on them (suite `fresh`) and the diagnosis decides raise / hold / lower on those episodes only.
With a stretch share (`CurriculumParams.stretch_share`) the highest level is the stretch level, one
above the target: a skill whose fresh instances there all fail is lowered back to the target (which
keeps its stretch), one that passes some is held there, so the target moves up to it.
"""

from __future__ import annotations

from collections.abc import Iterable

from clawloop.config.knobs import LEVELS
from clawloop.config.synthesis import Forms
from clawloop.core.tasks.task import Task
from clawloop.phases.synthesize.procedural.generate import FRESH_NAMESPACE, PLAIN, synthesize
from clawloop.phases.synthesize.skills import families
from clawloop.phases.synthesize.steering import Plan

FRESH_TASKS = "fresh.jsonl"
"""The fresh instances' file in the synthesize stage's output, beside pool.jsonl."""


def fresh_cells(pool: Iterable[Task]) -> list[tuple[str, int]]:
    """(skill, its highest level in the pool) for each skill a procedural generator can draw again.
    One cell a skill: 14 families x 8 episodes cost ~4 min of a 2-core evaluate stage; the level
    below (the plan's review share) was the frontier the last decision already passed."""
    known = families()
    top: dict[str, int] = {}
    for t in pool:
        if t.skill in known and t.level in LEVELS:
            top[t.skill] = max(top.get(t.skill, 0), t.level)
    return sorted(top.items())


def fresh_tasks(pool: list[Task], per_cell: int, *, seed: int, iteration: int, forms: Forms = PLAIN,
                exclude: Iterable[Task] = ()) -> list[Task]:
    """`per_cell` new instances of each of fresh_cells(pool) in the pool's `forms`, minus any task
    equal to one of the pool's or of `exclude`: same instruction and files, same id. (The evaluate
    stage drops those equal to a held-out task.) No twins: each instance is its own evidence."""
    cells = fresh_cells(pool)
    if per_cell <= 0 or not cells:
        return []
    drawn = synthesize(Plan(quotas=dict.fromkeys(cells, per_cell)), seed, iteration=iteration,
                       forms=forms.without_twins(), namespace=FRESH_NAMESPACE)
    known = {t.id for t in pool} | {t.id for t in exclude}
    return [t for t in drawn if t.id not in known]
