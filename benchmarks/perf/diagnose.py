"""Speed of the diagnosis: ~1,000,000 synthetic steps (~100k episodes) through `diagnose`.

Target: the whole diagnosis (DuckDB queries + taxonomy + report + report.md + PNG), imports of
duckdb and matplotlib included, in <= 10 s with 2 threads. Baselines in the same run, over the same Parquet files: DuckDB with 1 thread,
and a plain-Python implementation (pyarrow → rows, `taxonomy.classify` per episode, pass rates
with a dict) whose failure-mode counts must equal DuckDB's.

    python benchmarks/perf/diagnose.py [--episodes 100000] [--steps 10] [--threads 2] [--json]

--json prints one JSON object last.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TARGET_S = 10.0


def make_data(directory: Path, episodes: int, steps: int, parts: int) -> tuple[int, int]:
    """Write `parts` rollout parts; returns (episodes, steps) written."""
    import pyarrow.parquet as pq

    from clawloop.phases.diagnose.synthetic import random_tables

    ep_table, st_table = random_tables(episodes, steps_per_episode=steps, seed=0)
    per = -(-episodes // parts)
    st_ids = st_table.column("episode_id").to_numpy(zero_copy_only=False)
    ep_ids = ep_table.column("episode_id").to_numpy(zero_copy_only=False)
    lo_step = 0
    for i in range(parts):
        e = ep_table.slice(i * per, per)
        if e.num_rows == 0:
            break
        last = ep_ids[min((i + 1) * per, episodes) - 1]
        hi_step = lo_step
        while hi_step < len(st_ids) and st_ids[hi_step] <= last:
            hi_step += 1
        pq.write_table(e, directory / f"episodes-{i:05d}.parquet")
        pq.write_table(st_table.slice(lo_step, hi_step - lo_step), directory / f"steps-{i:05d}.parquet")
        lo_step = hi_step
    return ep_table.num_rows, st_table.num_rows


def python_baseline(directory: Path) -> tuple[float, dict[str, int], float]:
    """Pass rate and failure-mode counts in plain Python; returns (seconds, counts, pass rate)."""
    import pyarrow.parquet as pq

    from clawloop.core.taxonomy import classify
    from clawloop.phases.diagnose.queries import EPISODE_COLUMNS, STEP_COLUMNS

    t0 = time.perf_counter()
    steps: dict[str, list[dict]] = {}
    for part in sorted(directory.glob("steps*.parquet")):
        for row in pq.read_table(part, columns=list(STEP_COLUMNS)).to_pylist():
            steps.setdefault(row["episode_id"], []).append(row)
    counts: Counter[str] = Counter()
    cells: Counter[tuple[str, int, bool]] = Counter()
    for part in sorted(directory.glob("episodes*.parquet")):
        for ep in pq.read_table(part, columns=list(EPISODE_COLUMNS)).to_pylist():
            if ep["outcome"] in ("passed", "failed"):
                cells[(ep["skill"], ep["level"], ep["outcome"] == "passed")] += 1
            counts.update(classify(ep, steps.get(ep["episode_id"], [])))
    passes = sum(n for (_, _, ok), n in cells.items() if ok)
    rate = passes / max(1, sum(cells.values()))
    return time.perf_counter() - t0, dict(counts), rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=10, help="mean steps per episode")
    ap.add_argument("--parts", type=int, default=10, help="Parquet parts per table")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-python", action="store_true", help="skip the plain-Python baseline")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args()

    from clawloop.config.diagnosis import DiagnosisParams
    from clawloop.phases.diagnose.diagnose import diagnose

    with tempfile.TemporaryDirectory(prefix="clawloop-bench-") as tmp:
        data, out = Path(tmp) / "rollout", Path(tmp) / "out"
        data.mkdir()
        t0 = time.perf_counter()
        n_eps, n_steps = make_data(data, args.episodes, args.steps, args.parts)
        gen_s = time.perf_counter() - t0
        print(f"data: {n_eps} episodes, {n_steps} steps in {args.parts} parts ({gen_s:.1f} s to make)")

        t0 = time.perf_counter()
        import duckdb  # noqa: F401  (imported lazily by diagnose: time it apart, then runs compare fairly)
        import matplotlib.figure  # noqa: F401
        import_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        report = diagnose([data], out_dir=out, params=DiagnosisParams(threads=args.threads))
        main_s = time.perf_counter() - t0 + import_s
        print(f"diagnose, DuckDB {args.threads} threads: {main_s:.2f} s incl. {import_s:.2f} s of imports "
              f"({n_steps / main_s / 1e6:.2f} M steps/s), target <= {TARGET_S:.0f} s")

        t0 = time.perf_counter()
        one = diagnose([data], out_dir=Path(tmp) / "out1", params=DiagnosisParams(threads=1))
        one_s = time.perf_counter() - t0
        print(f"diagnose, DuckDB 1 thread: {one_s:.2f} s (imports already warm)")
        sql_counts = {m.mode: m.count for m in report.failure_modes if m.count}
        assert sql_counts == {m.mode: m.count for m in one.failure_modes if m.count}

        py_s, agree = None, None
        if not args.no_python:
            py_s, py_counts, py_rate = python_baseline(data)
            agree = py_counts == sql_counts and abs(py_rate - report.pass_rate) < 1e-12
            print(f"plain-Python baseline (pass rate + taxonomy only): {py_s:.2f} s; "
                  f"agrees with DuckDB: {agree}; speed-up x{py_s / main_s:.1f}")

    result = {
        "benchmark": "diagnose", "episodes": n_eps, "steps": n_steps, "threads": args.threads,
        "seconds": round(main_s, 3), "import_seconds": round(import_s, 3), "target_seconds": TARGET_S, "ok": main_s <= TARGET_S,
        "steps_per_second": round(n_steps / main_s),
        "baseline_duckdb_1_thread_seconds": round(one_s, 3),
        "baseline_python_seconds": None if py_s is None else round(py_s, 3),
        "python_agrees": agree, "pass_rate": round(report.pass_rate, 6),
        "failure_modes": sql_counts,
    }
    if args.json:
        print(json.dumps(result))
    if not result["ok"] or agree is False:
        sys.exit(1)


if __name__ == "__main__":
    main()
