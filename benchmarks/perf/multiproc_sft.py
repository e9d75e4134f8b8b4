"""One process vs two training the smoke profile's SFT on the same global batch (#79 item 2).

    python benchmarks/perf/multiproc_sft.py [--backend bwrap] [--only float32] [--json]

Each row runs `clawloop train --params profiles/smoke.yaml` (the tiny scratch model, 8 reference
trajectories of `echo` tasks, 4 steps, a loss logged every step) twice: 1 process with
per-device batch 4, and `accelerate launch --multi_gpu --num_processes 2` with batch 2 each (on a
CPU: two torchrun workers that transformers' `use_cpu` joins over gloo). Rows:
- float32: `sft.precision float32` (what tests/test_multiproc_sft.py asserts);
- bf16 autocast: the smoke profile's `precision: auto` on a CPU with native bf16;
- frozen trunk: float32 with `sft.trainable_layers 2` (the default loop's path: the trunk's output
  cached, clawloop/phases/train/frozen_trunk.py).
Printed per row: each step's loss in both runs, the largest relative loss difference, the largest
weight difference of the two checkpoints (and how far training moved a weight), and wall times.
With --json the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
TEST_SH = ('if [ "$(cat /workspace/{f} 2>/dev/null)" = "{v}" ]; then echo 1; else echo 0; fi '
           '> /logs/verifier/reward.txt')
ROWS: dict[str, list[str]] = {
    "float32": ["sft.precision=float32"],
    "bf16 autocast": ["sft.precision=auto"],
    "frozen trunk": ["sft.precision=float32", "sft.trainable_layers=2"],
}


def write_tasks(path: Path, n: int = 8) -> Path:
    """`n` one-command tasks whose reference conversations differ in length (the halves of a
    global batch pad differently)."""
    from clawloop.core.tasks.pool import write_pool
    from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier

    def task(i: int) -> Task:
        name, value = f"f{i}.txt", f"value-{i}" * (i + 1)
        return Task(instruction=f"Write {value} into {name}.", skill="files", level=1,
                    verifier=Verifier(files={"test.sh": FileSpec(content=TEST_SH.format(f=name, v=value))}),
                    solution=Solution(steps=[f"echo {value} > {name}"]))

    write_pool(path, [task(i) for i in range(n)])
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def train_command(base: Path, pool: Path, out: Path, batch: int, backend: str, sets: list[str]) -> list[str]:
    """`clawloop train` of the smoke profile's SFT (4 steps), a loss logged every step into OUT-logs."""
    return [str(BIN / "clawloop"), "train", "--method", "sft", "--base", str(base), "--tasks", str(pool),
            "--out", str(out), "--logs", str(logs_of(out)), "--params", str(ROOT / "profiles" / "smoke.yaml"),
            "--backend", backend, "--jobs", "2", "--set", f"sft.per_device_train_batch_size={batch}",
            "--set", "sft.logging_steps=1", *(a for s in sets for a in ("--set", s))]


def launch_two(command: list[str]) -> list[str]:
    """`command` as two CPU processes: --multi_gpu is accelerate's torchrun launcher (its --cpu
    starts a single process unless MPI is set up); without CUDA the trainer joins them over gloo."""
    return [str(BIN / "accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
            "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(free_port()), *command]


def logs_of(out: Path) -> Path:
    return out.with_name(out.name + "-logs")


def run(cmd: list[str], cwd: Path) -> float:
    """Run `cmd` (one torch thread a process, torchrun's default, for both runs); its wall seconds."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... exited {res.returncode}:\n{res.stdout[-3000:]}{res.stderr[-6000:]}")
    return time.monotonic() - t0


def losses(out: Path) -> list[float]:
    with (logs_of(out) / "plots" / "metrics" / "loss.tsv").open() as f:
        return [float(row["loss"]) for row in csv.DictReader(f, delimiter="\t")]


def weight_diffs(a: Path, b: Path, base: Path) -> tuple[float, float]:
    """The largest |a - b| over every weight, and the largest distance a trained weight moved from `base`."""
    import torch
    from safetensors.torch import load_file

    wa, wb, w0 = (load_file(str(d / "model.safetensors")) for d in (a, b, base))
    if wa.keys() != wb.keys():
        raise RuntimeError(f"{a} and {b} hold different tensors")
    diff = max(float((wa[k] - wb[k]).abs().max()) for k in wa)
    moved = max(float((wa[k].float() - w0[k].float()).abs().max()) for k in wa if k in w0 and w0[k].dtype == torch.float32)
    return diff, moved


def compare(base: Path, pool: Path, tmp: Path, backend: str, sets: list[str], name: str) -> dict[str, Any]:
    """The same SFT as 1 process x batch 4 and as 2 processes x batch 2; what differs."""
    one, two = tmp / f"{name}-one", tmp / f"{name}-two"
    t_one = run(train_command(base, pool, one, 4, backend, sets), tmp)
    t_two = run(launch_two(train_command(base, pool, two, 2, backend, sets)), tmp)
    meta1, meta2 = (json.loads((d / "train_meta.json").read_text()) for d in (one, two))
    l1, l2 = losses(one), losses(two)
    diff, moved = weight_diffs(one, two, base)
    trunk = [(m["stages"]["sft"].get("frozen_trunk") or {}).get("fast_calls", 0) for m in (meta1, meta2)]
    return {"one_process": l1, "two_processes": l2,
            "loss_rel_diff": max(abs(a - b) / abs(a) for a, b in zip(l1, l2, strict=True)),
            "weight_max_diff": diff, "weight_max_moved": moved, "same_data": meta1["data_sha256"] == meta2["data_sha256"],
            "steps": [meta1["steps"], meta2["steps"]], "frozen_trunk_calls": trunk,
            "wall_s": [round(t_one, 1), round(t_two, 1)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="bwrap", help="sandbox of the reference trajectories")
    ap.add_argument("--only", choices=sorted(ROWS), action="append", help="run only these rows (repeatable)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from clawloop.bootstrap.scratch import bootstrap

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="multiproc-sft-") as d:
        tmp = Path(d)
        base = tmp / "tiny"
        bootstrap(base, size="tiny", seed=0, corpus_pairs=2000)  # the tests' tiny_model
        pool = write_tasks(tmp / "pool.jsonl")
        for name in args.only or list(ROWS):
            r = out[name] = compare(base, pool, tmp, args.backend, ROWS[name], name.replace(" ", "-"))
            print(f"{name}: losses 1 proc {[round(x, 6) for x in r['one_process']]}, "
                  f"2 procs {[round(x, 6) for x in r['two_processes']]}; max rel loss diff {r['loss_rel_diff']:.1e}; "
                  f"max weight diff {r['weight_max_diff']:.1e} (moved up to {r['weight_max_moved']:.1e}); "
                  f"same data {r['same_data']}; frozen-trunk calls {r['frozen_trunk_calls']}; "
                  f"wall {r['wall_s'][0]} s vs {r['wall_s'][1]} s", flush=True)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
