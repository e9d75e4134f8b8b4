"""Agent-free validation throughput, and the same against a baseline revision in the same run.

    python benchmarks/perf/validate.py [--pool default|shell-core|FILE.jsonl] [--jobs 4]
        [--baseline REV] [--rounds 2] [--backend bwrap] [--tmp /dev/shm] [--json]

Pool: `default` synthesizes the loop's first pool (params.yaml's synthesis: seed 0, 96 tasks),
`shell-core` the Harbor suite (its references must pass, its no-op fail), or a pool JSONL. The
held-out check is off (a suite would overlap itself); everything else (no-op, oracle,
determinism, dedup) runs. Each measurement runs in a child process on the code of one tree: this
checkout, and with --baseline the files of REV (`git archive` into a temp dir), alternated round
by round on the same pool so that a busy machine slows both alike; the verdicts of the two must be
identical (kept ids, and the rejection reason of every other task). With --json the last line
printed is one JSON object carrying `tasks_per_s` (this checkout's median).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def busy_s() -> float:
    """Seconds every CPU of the machine spent busy so far (/proc/stat). os.times misses most of a
    check's CPU: what runs in a sandbox's pid namespace is reaped there, never by this process, and
    the kernel's own work on namespaces and cgroups is nobody's child."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def child(root: Path, pool: Path, backend: str, jobs: int) -> None:
    """One measurement on the code under `root`: one JSON line."""
    sys.path.insert(0, str(root))
    import clawloop
    import sandbox

    for pkg in (clawloop, sandbox):  # not the editable install's: this tree's
        assert Path(pkg.__file__).resolve().is_relative_to(root.resolve()), pkg.__file__
    from clawloop.core.tasks.pool import read_pool_lenient
    from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool

    tasks, errors = read_pool_lenient(pool)
    assert not errors, errors
    params = AgentFreeParams(heldout_threshold=1.0, examples=1_000_000)  # every id in the report
    validate_pool(tasks[:2], backend, 1, (), params)  # warm-up: caches, first sandbox
    cpu0, busy0 = os.times(), busy_s()
    t0 = time.monotonic()
    kept, rep = validate_pool(tasks, backend, jobs, (), params)
    took = time.monotonic() - t0
    cpu1, busy1 = os.times(), busy_s()
    cpu = sum(b - a for a, b in zip(cpu0[:4], cpu1[:4], strict=True))  # self + children, user + sys
    ids = {t.id for t in kept}
    verdicts = {t.id: "kept" for t in kept}
    for reason in rep["rejected"]:
        for ex in rep["examples"][reason]:
            verdicts[ex["id"]] = reason
    print(json.dumps({"seconds": round(took, 3), "tasks": len(tasks), "tasks_per_s": round(len(tasks) / took, 2),
                      "cpu_ms_per_task": round(1000 * cpu / len(tasks), 1),
                      "machine_cpu_ms_per_task": round(1000 * (busy1 - busy0) / len(tasks), 1), "kept": sorted(ids),
                      "rejected": rep["rejected"], "verdicts": verdicts}))


def write_pool(which: str, dest: Path) -> str:
    """The pool to measure as JSONL at `dest`; returns its name."""
    sys.path.insert(0, str(ROOT))
    from clawloop.core.tasks.pool import write_pool as write

    if which == "default":
        from clawloop.config.params import load_params
        from clawloop.phases.synthesize.pool import build_pool

        params = load_params(ROOT / "params.yaml")
        pool = build_pool(params.synthesis, 0, None, None, lambda routine: (_ for _ in ()).throw(
            RuntimeError(f"{routine} needs a policy")))
        write(dest, pool.tasks)
        return f"default (synthesized: seed {params.synthesis.seed}, {len(pool.tasks)} tasks)"
    if which == "shell-core":
        from clawloop.phases.evaluate.agent_eval import load_suite

        suite = load_suite(ROOT / "benchmarks" / "shell-core")
        write(dest, [t for t in suite.tasks if not t.needs_image])
        return "benchmarks/shell-core"
    dest.write_bytes(Path(which).read_bytes())
    return which


def export_tree(rev: str, dest: Path) -> None:
    """The library files of `rev` (clawloop/, sandbox/) under `dest`."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "clawloop", "sandbox"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pool", default="default", help="default | shell-core | a pool JSONL")
    ap.add_argument("--backend", default="bwrap")
    ap.add_argument("--jobs", type=int, default=4, help="sandboxes in parallel (the validate stage: 2 x sandbox.jobs)")
    ap.add_argument("--baseline", default=None, help="Also measure this git revision, alternating with this checkout.")
    ap.add_argument("--rounds", type=int, default=1, help="Measurements per tree.")
    ap.add_argument("--tmp", default=None, help="Set CLAWLOOP_SANDBOX_TMP (where sandbox files live) for this run.")
    ap.add_argument("--json", action="store_true", help="Print one JSON object last.")
    ap.add_argument("--child", nargs=2, metavar=("ROOT", "POOL"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tmp:
        os.environ["CLAWLOOP_SANDBOX_TMP"] = args.tmp
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]), args.backend, args.jobs)
        return
    env = dict(os.environ)
    if not env.get("CLAWLOOP_RUNTIME") and (ROOT / ".runtime").is_dir():
        env["CLAWLOOP_RUNTIME"] = str(ROOT / ".runtime")  # the baseline tree has no .runtime of its own
    with tempfile.TemporaryDirectory(prefix="clawloop-perf-validate-") as tmp:
        pool = Path(tmp) / "pool.jsonl"
        pool_name = write_pool(args.pool, pool)
        trees = {"current": ROOT}
        if args.baseline:
            trees["baseline"] = Path(tmp) / "baseline"
            export_tree(args.baseline, trees["baseline"])
        runs: dict[str, list[dict]] = {name: [] for name in trees}
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for name in order:
                out = subprocess.run([sys.executable, __file__, "--child", str(trees[name]), str(pool),
                                      "--backend", args.backend, "--jobs", str(args.jobs)],
                                     env=env, check=True, capture_output=True, text=True).stdout
                run = json.loads(out.strip().splitlines()[-1])
                runs[name].append(run)
                print(f"round {r + 1} {name}: {run['tasks']} tasks in {run['seconds']:.2f}s = {run['tasks_per_s']} "
                      f"tasks/s, {run['cpu_ms_per_task']} CPU ms/task of this process and its reaped children, "
                      f"{run.get('machine_cpu_ms_per_task', '?')} of the whole machine (kept {len(run['kept'])}, "
                      f"rejected {run['rejected'] or 'none'})", flush=True)
    result: dict = {"pool": pool_name, "backend": args.backend, "jobs": args.jobs, "cpus": os.cpu_count(),
                    "rounds": args.rounds, "sandbox_tmp": os.environ.get("CLAWLOOP_SANDBOX_TMP") or "(default)"}
    for name, rs in runs.items():
        result[name] = {"tasks_per_s": statistics.median(r["tasks_per_s"] for r in rs),
                        "cpu_ms_per_task": statistics.median(r["cpu_ms_per_task"] for r in rs),
                        "machine_cpu_ms_per_task": statistics.median(r.get("machine_cpu_ms_per_task", 0) for r in rs),
                        "runs_tasks_per_s": [r["tasks_per_s"] for r in rs], "kept": len(rs[0]["kept"]),
                        "rejected": rs[0]["rejected"]}
    verdicts = [r["verdicts"] for rs in runs.values() for r in rs]
    result["verdicts_identical"] = all(v == verdicts[0] for v in verdicts)
    if args.baseline:
        result["baseline_rev"] = args.baseline
        result["speedup"] = round(result["current"]["tasks_per_s"] / result["baseline"]["tasks_per_s"], 2)
        result["cpu_ratio"] = round(result["current"]["cpu_ms_per_task"] / result["baseline"]["cpu_ms_per_task"], 2)
        print(f"current vs {args.baseline}: {result['speedup']}x tasks/s, {result['cpu_ratio']}x CPU per task; "
              f"verdicts identical: {result['verdicts_identical']}")
    result["tasks_per_s"] = result["current"]["tasks_per_s"]
    result["loadavg_1m"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
