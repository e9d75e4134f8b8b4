"""Procedural synthesis throughput: tasks generated per second on one core.

    python benchmarks/perf/synth.py [--n 2000] [--repeat 3] [--json]

Times `synthesize` (generation, dedup retries, provenance) and, separately, writing the pool
as JSONL (serialization plus the content-hash id of each task), for a uniform plan over every
skill and level. Single-threaded, so tasks per CPU-second is the one-core figure; wall-clock
rates are printed too (they drop when other work shares the machine). Goal: >= 500 tasks/s
generated on one core. With --json the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000, help="Tasks per run.")
    ap.add_argument("--repeat", type=int, default=3, help="Runs; the best is reported.")
    ap.add_argument("--json", action="store_true", help="Print one JSON object last.")
    args = ap.parse_args()

    from clawloop.config.synthesis import CurriculumParams
    from clawloop.core.tasks.pool import write_pool
    from clawloop.phases.synthesize.procedural.generate import synthesize
    from clawloop.phases.synthesize.steering import plan

    p = plan(None, args.n, CurriculumParams(conditioning=False))
    synthesize(plan(None, 70, CurriculumParams(conditioning=False)), seed=999)  # warm caches
    gen, write, gen_wall = [], [], []
    size = 0
    for r in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        tasks = synthesize(p, seed=r)
        gen.append(time.process_time() - c0)
        gen_wall.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "pool.jsonl"
            c0 = time.process_time()
            write_pool(out, tasks)
            write.append(time.process_time() - c0)
            size = out.stat().st_size
        print(f"run {r + 1}: {args.n} tasks generated in {gen[-1]:.2f} CPU-s ({args.n / gen[-1]:.0f}/s; "
              f"wall {gen_wall[-1]:.2f}s), written in {write[-1]:.2f} CPU-s ({args.n / write[-1]:.0f}/s)")
    best_gen, best_write = min(gen), min(write)
    result = {
        "tasks": args.n, "skills": len({s for s, _ in p.quotas}), "cpus": os.cpu_count(),
        "generate_tasks_per_s": round(args.n / best_gen, 1),
        "generate_tasks_per_wall_s": round(args.n / min(gen_wall), 1),
        "write_tasks_per_s": round(args.n / best_write, 1),
        "end_to_end_tasks_per_s": round(args.n / (best_gen + best_write), 1),
        "pool_bytes_per_task": round(size / args.n), "goal_tasks_per_s": 500,
        "meets_goal": args.n / best_gen >= 500,
    }
    print(f"best: {result['generate_tasks_per_s']} tasks per CPU-second generated "
          f"({result['generate_tasks_per_wall_s']}/s wall), {result['end_to_end_tasks_per_s']}/s including the "
          f"pool write (goal >= 500/s generated: {'met' if result['meets_goal'] else 'MISSED'})")
    if args.json:
        print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
