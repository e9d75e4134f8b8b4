"""Multi-process SFT in miniature (#79): `accelerate launch` with two CPU processes (torchrun workers
that transformers' `use_cpu` joins over gloo) runs `clawloop train` on the smoke profile's SFT and
ends where one process does on the same global batch: 1 process x 4 examples vs 2 x 2, same seed,
float32. The commands are benchmarks/perf/multiproc_sft.py's (which also runs bf16 autocast and the
frozen trunk; its figures: docs/gpu.md).

Tolerance: relative 1e-5 on each step's loss, absolute 1e-5 on every weight (~100 float32
epsilons). The two runs see the same examples in the same order (accelerate gives rank r batch r of
each pair cut from one seeded permutation) and the same loss (the token count of the whole global
batch divides both); what differs is float32 rounding only: each half batch is padded to its own
longest row (other shapes, other summation orders) and the gradient is the sum of two halves (gloo
all-reduce). Measured: losses agree to 8e-8 relative, weights to 3e-7, while training moved a weight
up to 2e-3; a per-process mean or a wrong batch split moves the losses by 1e-3 or more.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOSS_RTOL = 1e-5
WEIGHT_ATOL = 1e-5


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("multiproc_sft", ROOT / "benchmarks" / "perf" / "multiproc_sft.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_two_cpu_processes_train_as_one(tiny_model: Path, backend: str, tmp_path: Path) -> None:
    bench = _bench()
    pool = bench.write_tasks(tmp_path / "pool.jsonl")  # 8 rows: whole global batches of 4, 2 steps an epoch
    sets = bench.ROWS["float32"]
    one, two = tmp_path / "one", tmp_path / "two"
    bench.run(bench.train_command(tiny_model, pool, one, 4, backend, sets), tmp_path)
    bench.run(bench.launch_two(bench.train_command(tiny_model, pool, two, 2, backend, sets)), tmp_path)

    meta1, meta2 = (json.loads((d / "train_meta.json").read_text()) for d in (one, two))
    assert meta1["data_sha256"] == meta2["data_sha256"] and meta2["examples"]["reference"] == 8
    assert meta1["steps"] == meta2["steps"] == 4 and meta2["stages"]["sft"]["steps"] == 4
    loss1, loss2 = bench.losses(one), bench.losses(two)
    assert len(loss1) == len(loss2) == 4
    assert loss1 == pytest.approx(loss2, rel=LOSS_RTOL), (loss1, loss2)
    diff, moved = bench.weight_diffs(one, two, tiny_model)
    assert diff <= WEIGHT_ATOL < moved, (diff, moved)
    assert not (tmp_path / "two.tmp").exists() and (two / "sft_conversations.jsonl").is_file()
