"""The number format the transformers backend computes replies in when `HFPolicyConfig.dtype` is
"auto": the one rule (`choose_dtype`) and what it is given (the CPU's flags, a measured probe).

On a GPU: bfloat16. On a CPU: bfloat16 only where the CPU has native bf16 matrix instructions
(avx512_bf16 / amx_bf16, clawloop.config.cpu) AND a short probe measures bf16 clearly faster than
float32 at the MLP's shape; float32 elsewhere. Both, because the flag alone is not the speed: a
64 x 896 x 4864 matmul ran at 250 GFLOPS in bf16 against 53 in float32 on an avx512_bf16 EPYC,
while on an AVX2-only box of the same kind bf16 is emulated and several times slower than float32
(benchmarks/perf/README.md); a VM can also report a flag its host does not honour at full speed.
The probe costs tens of milliseconds, once per process and shape.

Training decides its own format (clawloop.config.train, `trainer.precision`) from the same flags.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache

from clawloop.config.cpu import native_bf16

MIN_BF16_SPEEDUP = 1.5
"""bf16 is chosen on a CPU only when its probe matmul runs at least this many times float32's:
below it the rounding of bf16 is not worth it (and a noisy near-tie stays float32)."""
PROBE_ROWS = 32
"""Rows of the probe matmul: a decode step of a full lockstep batch (rollout.batch 36)."""
PROBE_REPEATS = 3
"""Timed products per format after one warm-up each (oneDNN builds its kernel at the first); the
fastest counts, so a probe that shares the CPU with a busy neighbour still sees the CPU's rate."""


def choose_dtype(device_type: str, native: bool, bf16_speedup: float | None) -> str:
    """THE rule for dtype "auto": bfloat16 on CUDA; on a CPU bfloat16 when it has native bf16
    matmuls (`native`) and the probe measured bf16 at least MIN_BF16_SPEEDUP x float32
    (`bf16_speedup`, None: not measured); float32 everywhere else."""
    if device_type == "cuda":
        return "bfloat16"
    if device_type == "cpu" and native and bf16_speedup is not None and bf16_speedup >= MIN_BF16_SPEEDUP:
        return "bfloat16"
    return "float32"


@dataclass(frozen=True)
class NumberFormat:
    """The dtype a policy computes in and why (what the stage's log and eval/summary.json record)."""

    dtype: str
    """"float32", "bfloat16" or "float16"."""
    source: str
    """"set" (HFPolicyConfig.dtype named it), "auto" (choose_dtype) or "model" (a model passed in)."""
    native_bf16: bool | None = None
    """Whether the CPU has avx512_bf16 / amx_bf16 (None: not asked, e.g. on a GPU)."""
    bf16_speedup: float | None = None
    """bf16 / float32 matmul rate measured by the probe (None: not probed)."""

    def __str__(self) -> str:
        if self.source != "auto" or self.native_bf16 is None:
            return f"{self.dtype} ({self.source})"
        if not self.native_bf16:
            return f"{self.dtype} (auto: no avx512_bf16/amx_bf16 on this CPU)"
        return f"{self.dtype} (auto: native bf16, probe matmul bf16 {self.bf16_speedup:.1f}x float32)"


@cache
def probe_bf16_speedup(hidden: int, intermediate: int, threads: int | None = None) -> float:
    """float32 time / bfloat16 time of a [PROBE_ROWS, hidden] x [hidden, intermediate] matmul (the
    MLP's up projection of a decode step) on `threads` torch threads (None: torch's current
    count). Cached per process and shape."""
    import torch

    prev = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(PROBE_ROWS, hidden, generator=gen)
        w = torch.randn(intermediate, hidden, generator=gen)
        best = {}
        for dtype in (torch.float32, torch.bfloat16):
            xd, wd = x.to(dtype), w.to(dtype)
            with torch.inference_mode():
                torch.nn.functional.linear(xd, wd)  # warm-up: kernel selection, packing caches
                times = []
                for _ in range(PROBE_REPEATS):
                    t0 = time.perf_counter()
                    torch.nn.functional.linear(xd, wd)
                    times.append(time.perf_counter() - t0)
            best[dtype] = min(times)
        return best[torch.float32] / max(best[torch.bfloat16], 1e-9)
    finally:
        torch.set_num_threads(prev)


def auto_format(device_type: str, hidden: int, intermediate: int, threads: int | None = None) -> NumberFormat:
    """The NumberFormat of dtype "auto" for a model of this MLP shape on `device_type`: the CPU's
    flags, then (only where they promise native bf16) the probe, then choose_dtype."""
    if device_type != "cpu":
        return NumberFormat(choose_dtype(device_type, False, None), "auto")
    native = native_bf16()
    speedup = probe_bf16_speedup(hidden, intermediate, threads) if native else None
    return NumberFormat(choose_dtype("cpu", native, speedup), "auto", native,
                        None if speedup is None else round(speedup, 2))
