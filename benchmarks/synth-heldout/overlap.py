"""How near the loop's procedural pools come to benchmarks/synth-heldout.

    .venv/bin/python benchmarks/synth-heldout/overlap.py [--iterations 10] [--json]

Synthesizes the pools of `--iterations` loop iterations the way the synthesize stage does (seed
`synthesis.seed + i`, the loop's seed namespace, 96 tasks, uniform over levels 1-5 so every
level the suite has is drawn) and prints, against the committed suite: how many pool tasks are
the same task as a held-out one (instruction and files: validation drops these), how many are
near-duplicates of one (validation's shingle Jaccard >= 0.9 with some held-out task) and how many
share the instruction alone (same words, other files). The last JSON line carries the figures.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clawloop.config.synthesis import CurriculumParams, Forms
from clawloop.core.tasks.suite import load_suite
from clawloop.phases.synthesize.procedural.generate import synthesize
from clawloop.phases.synthesize.steering import plan
from clawloop.phases.validate.agent_free import (
    AgentFreeParams,
    NearDuplicateIndex,
    _norm_words,
    exact_key,
    shingles,
)

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--tasks", type=int, default=96, help="tasks per iteration (params.yaml synthesis.tasks_per_iteration)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    params = AgentFreeParams()
    suite = load_suite(HERE).tasks
    same = {exact_key(t) for t in suite}
    words = {" ".join(_norm_words(t.instruction)) for t in suite}
    near = NearDuplicateIndex(params.near_duplicate_threshold)
    for t in suite:
        near.add(t.id, shingles(t, params))
    uniform = plan(None, args.tasks, CurriculumParams(conditioning=False))
    n = same_task = near_dup = same_words = half = 0
    closest = 0.0
    for i in range(1, args.iterations + 1):
        for t in synthesize(uniform, i, i, forms=Forms(conversational=0.5)):
            n += 1
            same_task += exact_key(t) in same
            same_words += " ".join(_norm_words(t.instruction)) in words
            other, j = near.match(shingles(t, params))
            near_dup += other is not None
            half += j >= 0.5
            closest = max(closest, j)
    fig = {"pool_tasks": n, "heldout_tasks": len(suite), "same_task": same_task, "near_duplicate": near_dup,
           "same_instruction": same_words, "near_duplicate_rate": round(near_dup / n, 4) if n else 0.0,
           "jaccard_ge_0.5": half, "max_jaccard": round(closest, 3)}
    print(f"[synth-heldout] {n} pool tasks of {args.iterations} iterations vs {len(suite)} held-out: "
          f"{same_task} the same task (dropped by validation), {near_dup} near-duplicates "
          f"(Jaccard >= {params.near_duplicate_threshold}: {fig['near_duplicate_rate']:.1%}), "
          f"{same_words} with the same instruction words; {half} at Jaccard >= 0.5, the closest {closest:.2f}")
    if args.json:
        print(json.dumps(fig))


if __name__ == "__main__":
    main()
