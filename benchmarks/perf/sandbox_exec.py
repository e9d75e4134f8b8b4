"""Per-command latency of the sandbox backends against a plain subprocess, and commands/s.

    .venv/bin/python benchmarks/perf/sandbox_exec.py [--json] [--n 50] [--seconds 3]

For each backend that works here: the median latency of `exec("true")` in one open sandbox,
next to `subprocess.run(["true"])` and `subprocess.run(["bash", "-c", "true"])` measured in the
same run (interleaved, so a busy machine slows all alike), the CPU time per command (this
process and its children; for bwrap also its exec server and the commands it reaped, which are
not our children), then commands/s with 1 and 2 sandboxes running in parallel threads. Goal:
bwrap <= 3x plain subprocess.run(["true"]).

A second table: the median cost of a whole sandbox life, open + 1, 2 or 10 x exec("true") +
close, and open + exec + mount + exec + close: bwrap starts a container with its exec server
once per sandbox and mount set (at the second command; the first runs in a one-shot
container), so short lives pay for it. Rows for bwrap's default and for each way forced
(BwrapSandbox.oneshot_commands). --json prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _cpu_s() -> float:
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _inside_cpu_s(box: object) -> float:
    """CPU time of a bwrap box's exec server and of the commands it reaped (0 for others).

    The commands are children of the server inside the container, not of this process, so
    RUSAGE_CHILDREN misses them until the container ends; /proc of the server has them."""
    servers = getattr(box, "_servers", None)
    if not servers:
        return 0.0
    bwrap = servers[0].proc.pid
    total = 0
    try:
        for pid in Path(f"/proc/{bwrap}/task/{bwrap}/children").read_text().split():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    except OSError:
        return 0.0
    return total / os.sysconf("SC_CLK_TCK")


LIFE = {"1 exec": (1, False), "2 execs": (2, False), "10 execs": (10, False), "exec+mount+exec": (1, True)}
"""Columns of the second table: (commands, then a mount and one more command)."""
BWRAP_POLICIES = {"bwrap": None, "bwrap server only": 0, "bwrap one-shot only": 10**9}
"""Rows for bwrap: its default, and BwrapSandbox.oneshot_commands forced either way."""


def lifecycle_ms(backend: str, n: int, runtime: Path | None, tmp: Path,
                 oneshot: int | None = None) -> dict[str, float]:
    """Median ms of open + k x exec("true") + close, per LIFE column."""
    import sandbox

    def cycle(k: int, mount: bool) -> None:
        with sandbox.open(backend, runtime_dir=runtime) as sb:
            if oneshot is not None:
                sb.oneshot_commands = oneshot  # type: ignore[attr-defined]
            for _ in range(k):
                sb.exec("true")
            if mount:
                sb.mount(tmp, "/tests")
                sb.exec("true")

    out = {}
    for name, (k, mount) in LIFE.items():
        cycle(k, mount)  # warm-up
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            cycle(k, mount)
            samples.append(time.perf_counter() - t)
        out[name] = statistics.median(samples) * 1000
    return out


def throughput(backend: str, parallel: int, seconds: float, runtime: Path | None) -> float:
    """Commands/s of `parallel` sandboxes each running `true` in a loop for `seconds`."""
    import sandbox

    boxes = [sandbox.create(backend, runtime_dir=runtime) for _ in range(parallel)]
    counts = [0] * parallel
    start = threading.Barrier(parallel + 1)

    def work(i: int) -> None:
        start.wait()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            boxes[i].exec("true")
            counts[i] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(parallel)]
    try:
        for t in threads:
            t.start()
        start.wait()
        t0 = time.monotonic()
        for t in threads:
            t.join()
        return sum(counts) / (time.monotonic() - t0)
    finally:
        for b in boxes:
            b.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    ap.add_argument("--n", type=int, default=50, help="commands per latency median")
    ap.add_argument("--seconds", type=float, default=3.0, help="duration of each throughput run")
    ap.add_argument("--backends", default="bwrap,docker,local", help="comma separated")
    args = ap.parse_args()

    import sandbox
    from clawloop.core.runtime import runtime_dir

    runtime = runtime_dir()
    backends, skipped = [], {}
    for name in args.backends.split(","):
        why = sandbox.unavailable_reason(name)
        if why:
            skipped[name] = why
        else:
            backends.append(name)

    # Latency: one open sandbox per backend; all variants interleaved round by round.
    boxes = {b: sandbox.create(b, runtime_dir=runtime) for b in backends}
    runs = {"subprocess true": lambda: subprocess.run(["true"]),
            "subprocess bash -c true": lambda: subprocess.run(["bash", "-c", "true"])}
    for b, box in boxes.items():
        runs[b] = lambda box=box: box.exec("true")
    samples: dict[str, list[float]] = {k: [] for k in runs}
    try:
        for fn in runs.values():  # warm-up (page cache, docker exec path, /etc template)
            fn()
        for _ in range(args.n):
            for k, fn in runs.items():
                t = time.perf_counter()
                fn()
                samples[k].append(time.perf_counter() - t)
    finally:
        for box in boxes.values():
            box.close()
    median_ms = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    base = median_ms["subprocess true"]
    # CPU time per command (this process and its children): less sensitive to a busy machine
    # than wall time, though the kernel's namespace teardown in workers is not counted.
    boxes = {b: sandbox.create(b, runtime_dir=runtime) for b in backends}
    runs.update({b: (lambda box=box: box.exec("true")) for b, box in boxes.items()})
    cpu_ms = {}
    try:
        for k, fn in runs.items():
            fn()  # bwrap: start the container first (its start is not per command)
            before = _cpu_s() + _inside_cpu_s(boxes.get(k))
            for _ in range(args.n):
                fn()
            cpu_ms[k] = (_cpu_s() + _inside_cpu_s(boxes.get(k)) - before) / args.n * 1000
    finally:
        for box in boxes.values():
            box.close()

    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        rows = {b: (b, None) for b in backends if b != "bwrap"}
        if "bwrap" in backends:
            rows = {name: ("bwrap", policy) for name, policy in BWRAP_POLICIES.items()} | rows
        life = {name: lifecycle_ms(b, max(10, args.n // 2), runtime, Path(tmp), policy)
                for name, (b, policy) in rows.items()}

    rates = {b: {str(p): throughput(b, p, args.seconds, runtime) for p in (1, 2)} for b in backends}

    load = os.getloadavg()[0]
    print(f"median latency of `true` over {args.n} runs (load average {load:.1f}, "
          f"{os.cpu_count()} CPUs)")
    print(f"{'variant':<26}{'ms':>8}{'x subprocess':>14}{'cpu ms':>8}{'cmd/s 1 box':>13}"
          f"{'cmd/s 2 boxes':>15}")
    for k, ms in median_ms.items():
        r = rates.get(k, {})
        cols = f"{r['1']:>13.0f}{r['2']:>15.0f}" if r else ""
        print(f"{k:<26}{ms:>8.2f}{ms / base:>14.1f}{cpu_ms[k]:>8.2f}{cols}")
    for name, why in skipped.items():
        print(f"{name:<26}skipped: {why}")
    print(f"\nwhole sandbox: open + commands + close, median of {max(10, args.n // 2)} (ms)")
    print(f"{'backend':<26}" + "".join(f"{c:>17}" for c in LIFE))
    for name, v in life.items():
        print(f"{name:<26}" + "".join(f"{v[c]:>17.1f}" for c in LIFE))
    ratio = median_ms.get("bwrap", float("nan")) / base
    goal = ratio <= 3.0
    print(f"goal bwrap <= 3x subprocess: {'met' if goal else 'NOT met'} ({ratio:.1f}x)")
    if args.json:
        print(json.dumps({"median_ms": median_ms, "cpu_ms": cpu_ms, "commands_per_s": rates,
                          "lifecycle_ms": life, "skipped": skipped,
                          "bwrap_over_subprocess": ratio, "goal_met": goal, "load_average": load,
                          "n": args.n}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
