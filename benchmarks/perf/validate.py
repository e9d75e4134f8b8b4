"""Agent-free validation throughput: 2 jobs vs 1 job on the same tasks, in one run.

    python benchmarks/perf/validate.py [--backend bwrap] [--repeat 1] [--tmp /dev/shm] [--json]

Tasks: benchmarks/shell-core when present, else tests/fixtures/harbor. The held-out check is off
(the suite would overlap itself); everything else (no-op, oracle, determinism, dedup) runs. With
--json the last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="bwrap")
    ap.add_argument("--suite", type=Path, default=None, help="Harbor suite (default: shell-core, else fixtures).")
    ap.add_argument("--repeat", type=int, default=1, help="Copies of the suite to validate (more tasks per run).")
    ap.add_argument("--tmp", default=None, help="Set CLAWLOOP_SANDBOX_TMP (where sandbox files live) for this run.")
    ap.add_argument("--trivial", type=int, default=40,
                    help="Also validate this many one-command tasks (the harness's own ceiling); 0: skip.")
    ap.add_argument("--json", action="store_true", help="Print one JSON object last.")
    args = ap.parse_args()
    if args.tmp:
        os.environ["CLAWLOOP_SANDBOX_TMP"] = args.tmp

    from clawloop.evaluation import load_suite
    from clawloop.validation.agent_free import AgentFreeParams, validate_pool
    from sandbox._paths import tmp_root

    suite_dir = args.suite or next(p for p in (ROOT / "benchmarks" / "shell-core", ROOT / "tests" / "fixtures" / "harbor")
                                   if p.is_dir())
    suite = load_suite(suite_dir)
    tasks = [t for t in suite.tasks if not t.needs_image] * args.repeat
    # Copies would be rejected as duplicates before any sandbox runs: tag each one.
    n = len(tasks) // args.repeat
    tasks = [t.model_copy(update={"instruction": t.instruction + f"\n\n(copy {k // n})"}) if k >= n else t
             for k, t in enumerate(tasks)]
    params = AgentFreeParams(heldout_threshold=1.0, near_duplicate_threshold=1.0)
    validate_pool(tasks[:2], args.backend, 1, (), params)  # warm-up: caches, first sandbox
    runs = {}
    for jobs in (1, 2):
        t0 = time.monotonic()
        kept, rep = validate_pool(tasks, args.backend, jobs, (), params)
        took = time.monotonic() - t0
        runs[jobs] = {"tasks": len(tasks), "kept": len(kept), "seconds": round(took, 2),
                      "tasks_per_s": round(len(tasks) / took, 2), "rejected": rep["rejected"]}
        print(f"{jobs} job{'s' if jobs > 1 else ''}: {len(tasks)} tasks in {took:.2f}s = "
              f"{len(tasks) / took:.2f} tasks/s (kept {len(kept)}, rejected {rep['rejected'] or 'none'})")
    trivial = None
    if args.trivial:
        from clawloop.tasks.task import FileSpec, Solution, Task, Verifier

        test = FileSpec.of('#!/bin/bash\nmkdir -p /logs/verifier\n[ -f out ] && echo 1 > /logs/verifier/reward.txt '
                           '|| echo 0 > /logs/verifier/reward.txt\n', 0o755)
        tiny = [Task(instruction=f"Create the file out ({k}).", verifier=Verifier(files={"test.sh": test}),
                     solution=Solution(steps=["touch out"])) for k in range(args.trivial)]
        t0 = time.monotonic()
        kept, _ = validate_pool(tiny, args.backend, 2, (), params)
        took = time.monotonic() - t0
        trivial = {"tasks": len(tiny), "kept": len(kept), "tasks_per_s": round(len(tiny) / took, 2)}
        print(f"trivial one-command tasks, 2 jobs: {trivial['tasks_per_s']} tasks/s (harness ceiling)")
    result = {
        "suite": str(suite_dir.relative_to(ROOT) if suite_dir.is_relative_to(ROOT) else suite_dir),
        "backend": args.backend, "cpus": os.cpu_count(),
        "sandbox_tmp": os.environ.get("CLAWLOOP_SANDBOX_TMP") or "(default)", "harness_tmp": str(tmp_root()),
        "jobs_1": runs[1], "jobs_2": runs[2],
        "speedup": round(runs[2]["tasks_per_s"] / runs[1]["tasks_per_s"], 2),
        "tasks_per_s": runs[2]["tasks_per_s"], "trivial_2_jobs": trivial,
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }
    print(f"speedup 2 vs 1 job: {result['speedup']}x")
    if args.json:
        print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
