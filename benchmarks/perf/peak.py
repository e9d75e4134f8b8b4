"""How close the loop's decoding runs to this machine's matmul ceiling, per number format.

    .venv/bin/python benchmarks/perf/peak.py [--json] [--model DIR] [--batch 32] [--max-new-tokens N] [--threads N]

Peak: the matrix products of one decode step of the model (per layer q/k/v fused, o, gate/up
fused, down; the output head) at `--batch` rows, in float32 (the baseline, first) and bfloat16,
each shape timed through `F.linear` and through oneDNN on packed weights (what the fast forward
uses), the faster counting, in PEAK_ROUNDS rounds with the formats alternated (the best round
counts); GFLOPS = the step's matmul FLOPs / its summed best times. That is
what the CPU's cores can do on these shapes, not a datasheet figure.

Decode: the engine as the loop's evaluation runs it (params.yaml's rollout.engine: the fast
forward, guesses, KV reuse) on `--batch` first-turn shell-core prompts (params.yaml's harness),
greedy, up to --max-new-tokens (default rollout.max_new_tokens); the decode time is the call's time
less that of the same call with one new token (the prefill), tokens are the replies' tokens after
the first. FLOPs per token: 2 x the Linear layers' weights (output head included) plus attention
(4 x layers x heads x head_dim x the mean context). fraction_of_peak = decode tokens/s x FLOPs per
token / peak GFLOPS of that format. Finished rows leave the batch, so late steps run fewer rows
than --batch, at a lower matmul rate: that is part of what the fraction measures.

The model is --model, else params.yaml's model.base built into a temporary directory. `dtype` in
the JSON is what HFPolicyConfig.dtype auto picks on this machine (clawloop.policy.number_format),
`fraction_of_peak` that format's. --json prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FORMATS = ("float32", "bfloat16")
"""Measured in this order: float32, today's CPU default, is the baseline."""
PEAK_ROUNDS = 3
"""Rounds of the matmul peak per format (the best counts)."""


def step_shapes(cfg: Any) -> list[tuple[str, int, int, int]]:
    """(name, count per decode step, in features, out features) of the model's matrix products."""
    hidden, inter, layers = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    head_dim = getattr(cfg, "head_dim", None) or hidden // cfg.num_attention_heads
    q, kv = cfg.num_attention_heads * head_dim, cfg.num_key_value_heads * head_dim
    return [("qkv", layers, hidden, q + 2 * kv), ("o", layers, q, hidden), ("gate_up", layers, hidden, 2 * inter),
            ("down", layers, inter, hidden), ("head", 1, hidden, cfg.vocab_size)]


def best_time(f: Any, repeats: int = 5, rounds: int = 3) -> float:
    """Fastest mean of `rounds` rounds of `repeats` calls, after two warm-up calls."""
    f()
    f()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(repeats):
            f()
        best = min(best, (time.perf_counter() - t0) / repeats)
    return best


def matmul_peak(cfg: Any, rows: int, dtype_name: str) -> dict[str, Any]:
    """GFLOPS of one decode step's products at `rows` rows in `dtype_name`, per shape and overall."""
    import torch

    dtype = getattr(torch, dtype_name)
    gen = torch.Generator().manual_seed(0)
    shapes, flops, seconds = {}, 0.0, 0.0
    with torch.inference_mode():
        for name, count, k, n in step_shapes(cfg):
            x = torch.randn(rows, k, generator=gen).to(dtype)
            w = (torch.randn(n, k, generator=gen) * k ** -0.5).to(dtype)
            t = best_time(lambda x=x, w=w: torch.nn.functional.linear(x, w))
            try:
                packed = torch.ops.mkldnn._reorder_linear_weight(w, rows)
                t = min(t, best_time(lambda x=x, p=packed: torch.ops.mkldnn._linear_pointwise(x, p, None, "none", [], "")))
            except (RuntimeError, AttributeError):  # no oneDNN here: F.linear's figure stands
                pass
            f = 2.0 * rows * k * n
            shapes[name] = round(f / t / 1e9, 1)
            flops += count * f
            seconds += count * t
    return {"gflops": round(flops / seconds / 1e9, 1), "shapes_gflops": shapes, "step_ms": round(1000 * seconds, 1)}


def flops_per_token(model: Any, context: float) -> float:
    """2 x the Linear weights (the output head too) + attention's QK^T and AV over `context` columns."""
    import torch

    cfg = model.config
    # (the output head is a Linear module, tied to the embedding or not)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return 2.0 * linear + 4.0 * cfg.num_hidden_layers * cfg.num_attention_heads * head_dim * context


def decode_rate(model_dir: Path, dtype: str, batch: int, max_new: int, threads: int | None) -> dict[str, Any]:
    """Decode tokens/s of the loop's engine on `batch` first-turn shell-core prompts in `dtype`."""
    from dataclasses import replace

    from clawloop.artifacts.suites import eval_suites
    from clawloop.config.params import load_params
    from clawloop.core.agent.harness import initial_messages, tools_for
    from clawloop.core.rollout_settings import rollout_settings
    from clawloop.policy.load import load_policy
    from clawloop.policy.types import SamplingParams

    params = load_params(ROOT / "params.yaml")
    ctx = rollout_settings(params)
    engine = ctx.policy.hf.engine if threads is None else replace(ctx.policy.hf.engine, threads=threads)
    spec = ctx.policy.model_copy(update={"backend": "hf", "model": str(model_dir), "policy_id": dtype,
                                         "hf": ctx.policy.hf.model_copy(update={"dtype": dtype, "engine": engine})})
    policy = load_policy(spec)
    harness = ctx.harness_for(model_dir)
    tasks = next(t for name, t, _ in eval_suites(params, None, only=["shell-core"]))
    convs = [initial_messages(tasks[i % len(tasks)], harness) for i in range(batch)]
    tools = tools_for(harness)
    policy.generate(convs[:2], SamplingParams(temperature=0.0, max_new_tokens=4), tools=tools)  # warm-up

    def timed(n: int, rows: list[Any]) -> tuple[float, list[Any]]:
        # A fresh prefix store each time: both calls prefill the same tokens.
        if policy.engine.prefix_store is not None:
            policy.engine.prefix_store.entries.clear()
        t0 = time.perf_counter()
        out = policy.generate(rows, SamplingParams(temperature=0.0, max_new_tokens=n), tools=tools)
        return time.perf_counter() - t0, out

    prefill_s, _ = timed(1, convs)
    total_s, gens = timed(max_new, convs)
    tokens = sum(g.completion_tokens - 1 for g in gens)
    decode_s = max(total_s - prefill_s, 1e-9)
    context = sum(g.prompt_tokens + g.completion_tokens / 2 for g in gens) / len(gens)
    out = {"decode_tokens_per_s": round(tokens / decode_s, 1), "decode_tokens": tokens,
           "decode_s": round(decode_s, 1), "prefill_s": round(prefill_s, 1),
           "flops_per_token": flops_per_token(policy.model, context), "mean_context": round(context),
           "fast_forward": bool(policy.engine.fast)}
    return out  # (the policy is freed here, before the next format's loads)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    ap.add_argument("--model", type=Path, help="checkpoint dir (default: params.yaml's model.base, built here)")
    ap.add_argument("--batch", type=int, default=32, help="rows of the peak's products and of the decode batch")
    ap.add_argument("--max-new-tokens", type=int, help="most tokens per reply (default: rollout.max_new_tokens)")
    ap.add_argument("--threads", type=int, help="torch threads (default: rollout.engine.threads)")
    args = ap.parse_args()

    import torch
    from transformers import AutoConfig

    from clawloop.config.cpu import cpu_flags, native_bf16
    from clawloop.config.params import load_params
    from clawloop.policy.number_format import auto_format

    params = load_params(ROOT / "params.yaml")
    threads = args.threads or params.rollout.engine.threads
    if threads:
        torch.set_num_threads(threads)
    max_new = args.max_new_tokens or params.rollout.max_new_tokens
    tmp = tempfile.TemporaryDirectory(prefix="clawloop-peak-")
    model = args.model
    if model is None:
        from clawloop.bootstrap.base import make_base

        model = Path(tmp.name) / "base"
        make_base(params.model.base, model)
    cfg = AutoConfig.from_pretrained(str(model))
    peaks: dict[str, dict[str, Any]] = {}
    for _ in range(PEAK_ROUNDS):  # formats alternated, the best round kept: a busy neighbour hits both alike
        for dtype in FORMATS:
            peak = matmul_peak(cfg, args.batch, dtype)
            if dtype not in peaks or peak["gflops"] > peaks[dtype]["gflops"]:
                peaks[dtype] = peak
    rows = {}
    for dtype in FORMATS:
        peak = peaks[dtype]
        print(f"  {dtype}: matmul peak {peak['gflops']} GFLOPS at {args.batch} rows", flush=True)
        dec = decode_rate(Path(model), dtype, args.batch, max_new, threads)
        achieved = dec["decode_tokens_per_s"] * dec["flops_per_token"] / 1e9
        rows[dtype] = {**peak, **dec, "achieved_gflops": round(achieved, 1),
                       "fraction_of_peak": round(achieved / peak["gflops"], 3)}
        print(f"  {dtype}: decode {dec['decode_tokens_per_s']} tokens/s", flush=True)
    chosen = auto_format("cpu", cfg.hidden_size, cfg.intermediate_size, threads)
    flags = sorted(cpu_flags() & {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "avx512_vnni", "avx_vnni"})
    print(f"matmul peak and decode, {Path(model).name}, batch {args.batch}, {threads or 'default'} threads, "
          f"CPU flags {' '.join(flags) or '?'}")
    names = [s[0] for s in step_shapes(cfg)]
    print(f"{'dtype':<9} {'peak GFLOPS':>11} " + " ".join(f"{n:>8}" for n in names)
          + f" {'decode tok/s':>12} {'GFLOP/tok':>9} {'achieved':>8} {'of peak':>7}")
    for dtype, r in rows.items():
        print(f"{dtype:<9} {r['gflops']:>11} " + " ".join(f"{r['shapes_gflops'][n]:>8}" for n in names)
              + f" {r['decode_tokens_per_s']:>12} {r['flops_per_token'] / 1e9:>9.2f} {r['achieved_gflops']:>8}"
              + f" {r['fraction_of_peak']:>7.1%}")
    speed = {k: round(rows["bfloat16"][k] / rows["float32"][k], 2) for k in ("gflops", "decode_tokens_per_s")}
    print(f"bfloat16 / float32: peak {speed['gflops']}x, decode {speed['decode_tokens_per_s']}x; "
          f"dtype auto here: {chosen}")
    if args.json:
        print(json.dumps({"benchmark": "peak", "model": str(model), "batch": args.batch, "threads": threads,
                          "cpu_flags": flags, "cpu_bf16": native_bf16(), "dtype": chosen.dtype,
                          "number_format": str(chosen), "fraction_of_peak": rows[chosen.dtype]["fraction_of_peak"],
                          "peak_gflops": {k: r["gflops"] for k, r in rows.items()},
                          "bf16_vs_fp32": speed, "formats": rows}))
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
