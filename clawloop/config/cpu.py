"""What this CPU computes natively, read from /proc/cpuinfo (no torch import, so it is cheap to ask).

bf16 is fast only where the CPU has bf16 dot-product instructions (AVX512-BF16, AMX-BF16): there a
64 x 896 x 4864 matmul ran at 250 GFLOPS in bfloat16 against 53 in float32; where it is emulated
(an AVX2-only box) bf16 training ran 28x slower than float32 (benchmarks/perf/README.md). oneDNN's
own `torch.ops.mkldnn._is_mkldnn_bf16_supported()` also says yes on AVX-512 CPUs without the bf16
instructions (it emulates them there), so it cannot make this choice.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
"""x86 flags (as Linux names them in /proc/cpuinfo) of native bf16 matrix arithmetic."""


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> frozenset[str]:
    """The feature flags of the first processor listed in `cpuinfo` (empty when it cannot be read:
    not Linux, or not x86, whose `Features` lines name other things)."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


@cache
def native_bf16(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """True when this CPU multiplies bf16 matrices natively (avx512_bf16 or amx_bf16); False where
    it cannot be told (bf16 is then assumed emulated, i.e. slower than float32)."""
    return bool(cpu_flags(cpuinfo) & BF16_FLAGS)
