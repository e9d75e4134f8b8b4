"""Procedural synthesis: a steering Plan in, a deterministic list of tasks out.

Each task gets its own rng seeded from (seed, iteration, skill, level, index, attempt) by
sha256, so a pool does not depend on the order in which it is built and the same seed gives a
byte-identical pool. A draw whose instruction (or id) is already in the pool is redrawn with
the next attempt number; running out of attempts means a generator lacks diversity (a bug).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections import Counter
from collections.abc import Iterable
from typing import Any

from clawloop.artifacts.diagnosis import Diversity
from clawloop.config.knobs import NO_KNOBS, Knobs
from clawloop.config.synthesis import Forms
from clawloop.core.progress import Progress, progress_for
from clawloop.core.tasks.answer import is_answer_task
from clawloop.core.tasks.task import Provenance, Task
from clawloop.phases.synthesize.procedural.chain import chain
from clawloop.phases.synthesize.procedural.register import in_detail, restyle, start_elsewhere
from clawloop.phases.synthesize.skills import SkillFamily, check_level, families, family
from clawloop.phases.synthesize.steering import Plan

MAX_ATTEMPTS = 50
PLAIN = Forms()
"""The generators' terse phrasing, every task in /workspace with its output in a file."""


HELDOUT_NAMESPACE = "synth-heldout"
"""The seed namespace of benchmarks/synth-heldout: its draws hash a key no synthesis stage makes
(stages synthesize in the empty namespace), so the split shares templates with training, never
seeds. Validation also drops a synthesized task equal to one of its tasks (instruction and files)."""

FRESH_NAMESPACE = "fresh-check"
"""The seed namespace of the evaluate stage's fresh held-in instances (clawloop.phases.synthesize.fresh):
new draws of the pool's cells that neither a pool nor synth-heldout makes."""


def task_seed(seed: int, iteration: int, skill: str, level: int, index: int, attempt: int,
              namespace: str = "") -> int:
    """The seed of one draw (56 bits, so it survives any JSON reader and signed 64-bit columns)."""
    key = f"{namespace + '/' if namespace else ''}{seed}/{iteration}/{skill}/{level}/{index}/{attempt}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:7], "big")


def synthesize(plan: Plan, seed: int, iteration: int = 0, progress: bool | Progress = False,
               forms: Forms = PLAIN, namespace: str = "") -> list[Task]:
    """Tasks for every (skill, level) quota of `plan`, in skill then level order, worded and shaped
    as `forms` says (clawloop.config.synthesis.Forms: conversational register, answer form and its file-form
    twin, chained with other tasks, starting elsewhere, at length, breadth intents). `progress` shows tasks made (clawloop.core.progress): a large
    pool takes a while. `namespace` separates the seeds of a held-out split (HELDOUT_NAMESPACE)
    from the loop's."""
    order = list(families())
    keys = sorted(plan.quotas, key=lambda k: (order.index(k[0]) if k[0] in order else len(order), k[0], k[1]))
    for skill, level in keys:  # unknown skills and levels fail before any draw
        family(skill)
        check_level(level)
    seen: set[str] = set()
    out: list[Task] = []
    with progress_for(progress, "synth", sum(plan.quotas[k] for k in keys), "tasks") as bar:
        for skill, level in keys:
            twin: Task | None = None
            for i in range(plan.quotas[(skill, level)]):
                if twin is not None:  # the slot goes to the last draw's file-form twin
                    out.append(twin)
                    twin = None
                else:
                    task, twin = _draw(plan, seed, iteration, skill, level, i, seen, forms, namespace)
                    out.append(task)
                bar.advance()
    return out


def _draw(plan: Plan, seed: int, iteration: int, skill: str, level: int, index: int, seen: set[str],
          forms: Forms = PLAIN, namespace: str = "") -> tuple[Task, Task | None]:
    """Task `index` of (skill, level), redrawn until its instruction is new to `seen`, and its
    file-form twin when it took the answer form and the twins share drew it (None otherwise)."""
    fam = family(skill)
    knobs = plan.knobs.get(skill, NO_KNOBS)
    for attempt in range(MAX_ATTEMPTS):
        s = task_seed(seed, iteration, skill, level, index, attempt, namespace)
        task = _build(fam, level, s, knobs, plan.knob_fraction, forms)
        key = " ".join(task.instruction.split())
        if key in seen:
            continue
        seen.add(key)
        provenance = Provenance(routine="procedural", generator=fam.generator_id, iteration=iteration, seed=s)
        twin = None
        if is_answer_task(task) and forms.twins and random.Random(f"twins/{s}").random() < forms.twins:
            twin = _build(fam, level, s, knobs, plan.knob_fraction, forms, file_form=True)
            if (twin_key := " ".join(twin.instruction.split())) in seen:
                twin = None
            else:
                seen.add(twin_key)
                twin = twin.model_copy(update={"provenance": provenance})
        return task.model_copy(update={"provenance": provenance}), twin
    raise RuntimeError(f"{fam.generator_id} level {level}: {MAX_ATTEMPTS} draws gave no new "
                       "instruction (generator lacks diversity)")


def _build(fam: SkillFamily, level: int, s: int, knobs: Knobs, knob_fraction: float, forms: Forms,
           file_form: bool = False) -> Task:
    """The task of seed `s` in `forms`; `file_form`: the same draw asked for its file even where
    the answer share picked the answer form (every rng below is consumed as without it, so the
    twin has the same workspace, wording slots, register and start)."""
    rng = random.Random(s)
    # only a share of a skill's tasks carry its knobs, so the pool keeps plain tasks too
    use = knobs if knobs != NO_KNOBS and rng.random() < knob_fraction else NO_KNOBS
    # the answer form draws from an rng of its own, so the main stream (and every task that
    # does not take the form) stays what it was without it
    arng = random.Random(f"answer/{s}")
    asked = bool(forms.answer) and arng.random() < forms.answer
    # breadth intents too (the twin takes the same one): a draw that does not take them is as before
    brng = random.Random(f"breadth/{s}")
    if forms.breadth and level in fam.breadth and brng.random() < forms.breadth:
        task = fam.generate(level, rng, use, arng if asked and not file_form else None, breadth=True)
    else:
        task = fam.generate(level, rng, use, arng if asked and not file_form else None)
    crng = random.Random(f"chained/{s}")  # its own rng too: the main stream, and every unchained task, as before
    if forms.chained and not file_form and crng.random() < forms.chained:
        task = _chained(task, level, crng)
    if forms.conversational and rng.random() < forms.conversational:
        task = restyle(task, rng)
    erng = random.Random(f"elsewhere/{s}")  # its own rng too; after restyle, which reads the workdir
    if forms.elsewhere and erng.random() < forms.elsewhere:
        task = start_elsewhere(task, erng)
    drng = random.Random(f"detailed/{s}")  # last: the forms above leave multi-line instructions alone
    if forms.detailed and drng.random() < forms.detailed:
        task = in_detail(task, drng)
    return task


CHAIN_ATTEMPTS = 8
"""Draws of other parts tried before a task stays on its own (clawloop.phases.synthesize.procedural.chain)."""


def _chained(first: Task, level: int, rng: random.Random) -> Task:
    """`first` chained with one or two tasks of any family at levels up to its own (a quarter of
    them three parts), drawn until the parts fit together; `first` alone when none did."""
    fams = families()
    names = sorted(fams)
    n = 3 if rng.random() < 0.25 else 2
    for _ in range(CHAIN_ATTEMPTS):
        parts = [first]
        for _ in range(n - 1):
            fam = fams[names[rng.randrange(len(names))]]
            parts.append(fam.generate(rng.randint(1, level), random.Random(rng.getrandbits(56)), NO_KNOBS, None))
        joined = chain(parts, rng)
        if joined is not None:
            return joined
    return first


def diversity(tasks: Iterable[Task]) -> Diversity:
    """The report's diversity figures for a pool (shared schema, so trends compare)."""
    tasks = list(tasks)
    by_skill = Counter(t.skill for t in tasks)
    n = len(tasks)
    entropy = -sum((c / n) * math.log2(c / n) for c in by_skill.values()) if n else 0.0
    return Diversity(
        tasks=n,
        unique_instructions=len({" ".join(t.instruction.split()) for t in tasks}),
        skills=len(by_skill),
        skill_entropy=round(entropy, 4),
        mean_level=round(sum(t.level for t in tasks) / n, 4) if n else 0.0,
    )


def manifest(plan: Plan, tasks: list[Task], *, seed: int, iteration: int,
             report: str | None = None, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the pool's `<out>.manifest.json` records: plan, diversity and generator versions."""
    levels = Counter(t.level for t in tasks)
    knobbed = Counter(tag for t in tasks for tag in t.tags if tag.startswith("knob:"))
    return {
        "routine": "procedural",
        "seed": seed,
        "iteration": iteration,
        "report": report,
        "tasks": len(tasks),
        "plan": plan.to_json(),
        "diversity": {**diversity(tasks).model_dump(), "levels": {str(k): levels[k] for k in sorted(levels)},
                      "knob_tags": dict(sorted(knobbed.items()))},
        "generators": {name: fam.generator_id for name, fam in families().items()},
        "curriculum_params": params,
    }
