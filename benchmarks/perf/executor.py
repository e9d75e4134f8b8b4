"""Ray executor vs local threads on the same suite, in one run (`clawloop eval --agent oracle`).

    python benchmarks/perf/executor.py [--backend bwrap] [--jobs 2] [--repeat 3] [--two-nodes] [--json]

Rows, all on benchmarks/shell-core with the oracle agent (72 episodes):
- local: `executor: local`, `--jobs` threads (the baseline);
- ray, warm: `executor: ray` on a local cluster of `--jobs` CPUs that is already running (what a
  driver joining a cluster pays: task submission, worker processes, results back);
- ray, cold: the same with the cluster started for the run and shut down after (what a stage or
  a `clawloop eval --executor ray` pays without a cluster: `ray.init` is ~7 s on 2 cores);
- with --two-nodes, ray on two nodes: `ray start --head --num-cpus 1` and `ray start --address
  ... --num-cpus 1` as subprocesses on 127.0.0.2, episodes per node id shown (stopped by pid).
local and ray warm alternate `--repeat` times; the medians are compared. Every run must pass the
same tasks. With --json the last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
SUITE = ROOT / "benchmarks" / "shell-core"


def _run(executor: str, backend: str, jobs: int) -> tuple[float, set[str], dict[str, Any]]:
    from clawloop.phases.evaluate.agent_eval import EvalConfig, evaluate

    t0 = time.perf_counter()
    records, summary = evaluate([SUITE], "oracle", EvalConfig(backend=backend, jobs=jobs, executor=executor))
    took = time.perf_counter() - t0
    return took, {r.name for r in records if r.passed}, summary


def _ray_start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    ray = Path(sys.executable).parent / "ray"
    return subprocess.Popen([str(ray), "start", *args, "--disable-usage-stats", "--block"], env=env,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def two_nodes(backend: str, tmp: Path) -> dict[str, Any]:
    """Start a head and a second node of one CPU each (`ray start`, loopback), run the suite on them."""
    ip = "127.0.0.2"  # Ray rewrites 127.0.0.1 to the machine's address; the rest of 127/8 it keeps
    env = {**os.environ, "RAY_AUTH_MODE": "token", "PYTHONPATH": str(ROOT)}  # joiners present the token too
    procs: list[subprocess.Popen[bytes]] = []
    try:
        t0 = time.perf_counter()
        procs.append(_ray_start(["--head", "--node-ip-address", ip, "--port", "0", "--num-cpus", "1",
                                 "--include-dashboard", "false"], tmp / "head.log", env))
        address = None
        while address is None and time.perf_counter() - t0 < 120:
            time.sleep(0.5)
            m = re.search(r"ray start --address='([^']+)'", (tmp / "head.log").read_text(errors="replace"))
            address = m.group(1) if m else None
            if procs[0].poll() is not None:
                raise RuntimeError(f"ray start --head exited: {(tmp / 'head.log').read_text()[-500:]}")
        if address is None:
            raise RuntimeError("ray start --head printed no address in 120 s")
        procs.append(_ray_start(["--address", address, "--node-ip-address", ip, "--num-cpus", "1"],
                                tmp / "node.log", env))
        import ray

        os.environ.update(RAY_AUTH_MODE="token", RAY_ADDRESS=address)
        ray.init(address=address, _node_ip_address=ip, include_dashboard=False, log_to_driver=False,
                 logging_level="warning", configure_logging=False)
        while len([n for n in ray.nodes() if n["Alive"]]) < 2 and time.perf_counter() - t0 < 120:
            time.sleep(0.5)
        ray.shutdown()
        started = time.perf_counter() - t0
        took, passed, summary = _run("ray", backend, 2)  # joins $RAY_ADDRESS
        return {"address": address, "cluster_start_s": round(started, 2), "wall_s": round(took, 2),
                "passed": len(passed), "episodes_per_node": summary.get("nodes", {}), "_passed": passed}
    finally:
        os.environ.pop("RAY_ADDRESS", None)
        for p in reversed(procs):  # SIGTERM: `ray start --block` stops the processes it started
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="bwrap")
    ap.add_argument("--jobs", type=int, default=2, help="Threads of the local executor = CPUs of the local cluster.")
    ap.add_argument("--repeat", type=int, default=3, help="Alternating local / ray-warm runs.")
    ap.add_argument("--two-nodes", action="store_true", help="Also run on a two-node `ray start` cluster.")
    ap.add_argument("--json", action="store_true", help="Print one JSON object last.")
    args = ap.parse_args()
    os.environ.pop("RAY_ADDRESS", None)

    from clawloop.core.executor import ExecutorParams, ray_session

    _run("local", args.backend, args.jobs)  # warm-up: caches, the backend's first-use probe
    local: list[float] = []
    warm: list[float] = []
    passed: list[set[str]] = []
    t0 = time.perf_counter()
    with ray_session(ExecutorParams(kind="ray", address="local", num_cpus=args.jobs), args.jobs):
        start_s = time.perf_counter() - t0
        _run("ray", args.backend, args.jobs)  # warm-up: worker processes import clawloop
        for _ in range(args.repeat):
            for executor, times in (("local", local), ("ray", warm)):
                took, ok, _ = _run(executor, args.backend, args.jobs)
                times.append(took)
                passed.append(ok)
    cold, ok, summary = _run("ray", args.backend, args.jobs)  # starts its own cluster, shuts it down
    passed.append(ok)
    episodes = summary["episodes"]
    rows: list[tuple[str, float, float]] = [
        ("local threads (baseline)", statistics.median(local), statistics.median(local)),
        ("ray, warm local cluster", statistics.median(warm), statistics.median(local)),
        ("ray, cold (cluster started + shut down)", cold, statistics.median(local)),
    ]
    nodes = None
    if args.two_nodes:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            nodes = two_nodes(args.backend, Path(d))
        passed.append(nodes.pop("_passed"))
        rows.append(("ray, two `ray start` nodes x 1 CPU", nodes["wall_s"], statistics.median(local)))
    same = all(p == passed[0] for p in passed)
    print(f"shell-core oracle, {episodes} episodes, backend {args.backend}, {args.jobs} jobs/CPUs, "
          f"{os.cpu_count()} cores, median of {args.repeat}")
    print(f"{'executor':44s} {'wall s':>8s} {'episodes/s':>11s} {'vs local':>9s}")
    for name, wall, base in rows:
        print(f"{name:44s} {wall:8.2f} {episodes / wall:11.2f} {wall / base:8.2f}x")
    print(f"local Ray cluster start: {start_s:.1f} s; same passed set in every run: {same} "
          f"({len(passed[0])}/{episodes})")
    if nodes is not None:
        print(f"two nodes: episodes per node {nodes['episodes_per_node']} (cluster up in {nodes['cluster_start_s']} s)")
    result = {
        "suite": "benchmarks/shell-core", "agent": "oracle", "backend": args.backend, "jobs": args.jobs,
        "episodes": episodes, "cpus": os.cpu_count(), "repeat": args.repeat,
        "local_s": [round(x, 2) for x in local], "ray_warm_s": [round(x, 2) for x in warm],
        "ray_cold_s": round(cold, 2), "ray_start_s": round(start_s, 2),
        "overhead_warm": round(statistics.median(warm) / statistics.median(local), 3),
        "overhead_cold": round(cold / statistics.median(local), 3),
        "same_passed": same, "passed": len(passed[0]), "two_nodes": nodes,
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }
    if args.json:
        print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
