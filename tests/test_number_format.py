"""The number format of rollouts (HFPolicyConfig.dtype "auto", clawloop.policy.number_format): bf16
on a CPU with native bf16 matmuls that a probe measures clearly faster, float32 elsewhere; and
the fast engine (forward, prefix cache, guesses, int8) computing in bf16."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from clawloop.config import cpu
from clawloop.config.engine import EngineConfig
from clawloop.core.agent.tool_calls import TOOLS, tool_message
from clawloop.policy import number_format
from clawloop.policy.hf import HFPolicy, HFPolicyConfig
from clawloop.policy.number_format import MIN_BF16_SPEEDUP, NumberFormat, auto_format, choose_dtype
from clawloop.policy.types import SamplingParams

EPYC_BF16 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
flags\t\t: fpu sse sse2 avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 avx_vnni
bogomips\t: 4792.80
"""
EPYC_AVX2 = EPYC_BF16.replace(" avx512f avx512bw avx512_vnni avx512_bf16 avx_vnni", "")
SAPPHIRE_AMX = EPYC_AVX2.replace("avx2 fma", "avx2 fma amx_tile amx_bf16 amx_int8")


@pytest.mark.parametrize("text, speedup, want", [
    (EPYC_BF16, 4.0, "bfloat16"),   # native bf16, measured fast
    (SAPPHIRE_AMX, 2.0, "bfloat16"),
    (EPYC_BF16, 1.2, "float32"),    # the flag, but the probe does not see the speed (a VM, a busy host)
    (EPYC_AVX2, 4.0, "float32"),    # no flag: emulated bf16, whatever a timing says
    (EPYC_BF16, None, "float32"),   # not measured
])
def test_cpu_dtype_follows_the_flags_and_the_probe(tmp_path: Path, text: str, speedup: float | None,
                                                   want: str) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(text)
    native = bool(cpu.cpu_flags(info) & cpu.BF16_FLAGS)
    assert choose_dtype("cpu", native, speedup) == want


def test_the_probes_decision_is_a_threshold_and_gpus_take_bf16() -> None:
    assert choose_dtype("cpu", True, MIN_BF16_SPEEDUP) == "bfloat16"
    assert choose_dtype("cpu", True, MIN_BF16_SPEEDUP - 0.01) == "float32"
    assert choose_dtype("cuda", False, None) == "bfloat16"
    assert choose_dtype("mps", True, 9.0) == "float32"


def test_auto_format_probes_only_where_the_flags_promise_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    probed: list[tuple[int, int]] = []

    def probe(hidden: int, intermediate: int, threads: int | None = None) -> float:
        probed.append((hidden, intermediate))
        return 3.0

    monkeypatch.setattr(number_format, "probe_bf16_speedup", probe)
    monkeypatch.setattr(number_format, "native_bf16", lambda: False)
    assert auto_format("cpu", 896, 4864) == NumberFormat("float32", "auto", False, None) and not probed
    monkeypatch.setattr(number_format, "native_bf16", lambda: True)
    fmt = auto_format("cpu", 896, 4864)
    assert fmt == NumberFormat("bfloat16", "auto", True, 3.0) and probed == [(896, 4864)]
    assert "probe matmul bf16 3.0x float32" in str(fmt)


def test_the_probe_measures_a_ratio() -> None:
    """The real probe runs (tiny shape) and gives a positive ratio, cached per shape."""
    a = number_format.probe_bf16_speedup(32, 64, 1)
    assert a > 0 and number_format.probe_bf16_speedup(32, 64, 1) == a


def test_auto_loads_bf16_where_the_cpu_has_it(tmp_path: Path, qwen3: Any, tokenizer: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """dtype auto on a CPU: the model loads in what auto_format picks, and the policy says why."""
    qwen3.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    monkeypatch.setattr(number_format, "probe_bf16_speedup", lambda *a: 3.0)
    config = HFPolicyConfig(device="cpu", engine=EngineConfig(threads=1, forward="auto"))
    monkeypatch.setattr(number_format, "native_bf16", lambda: True)
    p = HFPolicy(tmp_path, config)
    assert p.model.dtype == torch.bfloat16 and p.number_format.dtype == "bfloat16"
    assert p.engine.fast  # the fast forward runs bf16 weights
    monkeypatch.setattr(number_format, "native_bf16", lambda: False)
    assert HFPolicy(tmp_path, config).model.dtype == torch.float32
    assert str(HFPolicy(tmp_path, config.model_copy(update={"dtype": "bfloat16"})).number_format) == "bfloat16 (set)"


SYSTEM = {"role": "system", "content": "You are an agent."}
CONVS = [[SYSTEM, {"role": "user", "content": "List the files."}],
         [SYSTEM, {"role": "user", "content": "Count the lines of notes.txt and notes.txt again."}],
         [SYSTEM, {"role": "user", "content": "List the files."}]]


@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_fast_engine_generates_in_bf16(qwen3: Any, tokenizer: Any, quantize: str) -> None:
    """A bf16 model through the fast forward with guesses and KV reuse over two turns, greedy and
    sampled: no dtype mismatch, bf16 caches, replies of the asked length; its first-step logits
    near transformers' own bf16 forward (bf16 rounding apart)."""
    import copy

    from clawloop.policy.engine.engine import hf_forward
    from clawloop.policy.engine.fast_forward import FastLM
    from clawloop.policy.engine.prefix_cache import Hit, layout

    model = copy.deepcopy(qwen3).to(torch.bfloat16)
    p = HFPolicy("unused", HFPolicyConfig(engine=EngineConfig(threads=1, forward="fast", speculate=6,
                                                              kv_reuse_entries=16, quantize=quantize)),
                 model=model, tokenizer=tokenizer)
    assert isinstance(p.engine.forward, FastLM) and p.number_format.dtype == "bfloat16"
    convs = [list(c) for c in CONVS]
    for turn, sampling in enumerate([SamplingParams(temperature=0.0, max_new_tokens=12),
                                     SamplingParams(temperature=0.8, max_new_tokens=12, seed=1)]):
        got = p.generate(convs, sampling, tools=TOOLS)
        assert len(got) == 3 and all(0 < g.completion_tokens <= 12 for g in got)
        convs = [[*c, {"role": "assistant", "content": g.text}, tool_message(f"f{turn}\n[exit code 0]")]
                 for c, g in zip(convs, got, strict=True)]
    store = p.engine.prefix_store
    assert store is not None and store.reused_tokens > 0
    assert all(k.dtype == torch.bfloat16 for entry in store.entries.values() for k, _ in entry[1])
    if quantize == "none":
        ids = [tokenizer(p.render(c, TOOLS), add_special_tokens=False)["input_ids"] for c in CONVS[:2]]
        outs = []
        for forward in (hf_forward(model), p.engine.forward):  # (the fast one's matrices are the model's)
            x, mask, cache, _ = layout(ids, [Hit(0, None, None)] * 2, tokenizer.pad_token_id, model.config, "cpu",
                                       torch.bfloat16, 4, zeroed=forward is not p.engine.forward)
            with torch.inference_mode():
                outs.append(forward(x, mask, (mask.cumsum(-1) - 1).clamp(min=0), cache, 0, last_only=True).float())
        scale = outs[0].abs().max()
        assert (outs[0] - outs[1]).abs().max() < 0.05 * scale, ((outs[0] - outs[1]).abs().max(), scale)



def test_eval_summary_records_the_number_format() -> None:
    from clawloop.phases.evaluate.heldout import SuiteResults

    fmt = NumberFormat("bfloat16", "auto", True, 3.4)
    assert SuiteResults().detail(0, 1.0, fmt).number_format == str(fmt)
    assert SuiteResults().detail(0, 1.0).number_format is None  # a backend that does not say
