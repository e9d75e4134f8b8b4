"""Generation backends side by side on one checkpoint (run through rollout.py --compare).

    .venv/bin/python benchmarks/perf/rollout.py --compare [--model DIR] [--threads N] [--json]

Every candidate gets the same first-turn shell-core prompts (system prompt, tools, instruction;
~300 tokens) and greedy decoding of up to --max-new-tokens tokens:
- time to first token: batch 1, one new token, median of 3 prompts;
- tokens/s at batch 1 (4 prompts one after another), 8 and 32 (one call each, distinct prompts);
- load cost: model load, plus GGUF conversion and server start for llama.cpp;
- greedy agreement: replies identical to the baseline's (HF fp32 generate) on the same 44 prompts.
The baseline runs first in the same process, so every speedup is against this run.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ("hf-generate", "hf-fp32", "hf-bf16", "hf-int8", "llamacpp-q8_0", "llamacpp-f16")


def load_candidate(name: str, model: Path, threads: int | None) -> Any:
    from clawloop.models.policy import HFPolicy, HFPolicyConfig, LlamaCppPolicyConfig

    if name.startswith("llamacpp-"):
        from clawloop.models.llamacpp_policy import LlamaCppPolicy

        return LlamaCppPolicy(model, LlamaCppPolicyConfig(threads=threads, parallel=32,
                                                          gguf_type=name.split("-", 1)[1]))
    dtype = "bfloat16" if name == "hf-bf16" else "float32"
    decode = "generate" if name == "hf-generate" else "loop"
    policy = HFPolicy(model, HFPolicyConfig(threads=threads, dtype=dtype, decode=decode))
    if name == "hf-int8":
        import torch

        # Linear layers to int8 with dynamic activation scales; the tied embedding stays fp32.
        policy.model = torch.ao.quantization.quantize_dynamic(policy.model, {torch.nn.Linear},
                                                              dtype=torch.qint8)
    return policy


def first_turn_prompts(n: int) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    from clawloop.agent.harness import HarnessConfig, initial_messages, tools_for
    from clawloop.evaluation import load_suite

    harness = HarnessConfig(max_turns=6, command_timeout_s=10, max_format_errors=1)
    tasks = [t for t in load_suite(ROOT / "benchmarks" / "shell-core").tasks if not t.needs_image]
    return [initial_messages(tasks[i % len(tasks)], harness) for i in range(n)], tools_for(harness)


def measure(policy: Any, convs: list, tools: list, max_new: int) -> dict[str, Any]:
    from clawloop.models.policy import SamplingParams

    greedy = SamplingParams(temperature=0.0, max_new_tokens=max_new)
    policy.generate(convs[-1:], SamplingParams(temperature=0.0, max_new_tokens=4), tools=tools)  # warm up
    ttft = []
    for conv in convs[0:3]:
        t0 = time.perf_counter()
        policy.generate([conv], SamplingParams(temperature=0.0, max_new_tokens=1), tools=tools)
        ttft.append(time.perf_counter() - t0)
    out: dict[str, Any] = {"ttft_ms": round(1000 * statistics.median(ttft), 1)}
    replies: list[str] = []
    for batch, group in ((1, convs[3:7]), (8, convs[7:15]), (32, convs[15:47])):
        t0 = time.perf_counter()
        gens = []
        for i in range(0, len(group), batch):
            gens += policy.generate(group[i:i + batch], greedy, tools=tools)
        dt = time.perf_counter() - t0
        out[f"b{batch}_tokens_per_s"] = round(sum(g.completion_tokens for g in gens) / dt, 1)
        replies += [g.text for g in gens]
    out["replies"] = replies
    return out


def compare(args: Any) -> int:
    from clawloop.models.base import make_base

    names = args.candidates.split(",") if args.candidates else list(CANDIDATES)
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        print(f"unknown candidates {unknown} (known: {', '.join(CANDIDATES)})")
        return 2
    names = ["hf-generate"] + [n for n in names if n != "hf-generate"]  # the baseline, first
    tmp = tempfile.TemporaryDirectory(prefix="clawloop-backends-")
    os.environ["CLAWLOOP_CACHE"] = tmp.name  # conversions are timed, not taken from an old cache
    model = args.model
    if model is None:
        model = Path(tmp.name) / "base"
        make_base("smollm2-135m-instruct", model)
    convs, tools = first_turn_prompts(47)
    rows = []
    for name in names:
        t0 = time.perf_counter()
        policy = load_candidate(name, Path(model), args.threads)
        row = {"candidate": name, "load_s": round(time.perf_counter() - t0, 1)}
        if hasattr(policy, "convert_s"):
            row["convert_s"] = round(policy.convert_s, 1)
        row.update(measure(policy, convs, tools, args.max_new_tokens))
        if hasattr(policy, "close"):
            policy.close()
        del policy
        rows.append(row)
        print(f"  {name}: done ({row['b32_tokens_per_s']} tok/s at batch 32)", flush=True)
    ref = rows[0]
    ref_replies = ref["replies"]
    n = len(ref_replies)
    for r in rows:
        r["agree"] = sum(a == b for a, b in zip(r["replies"], ref_replies, strict=True))
        for b in (1, 8, 32):
            r[f"b{b}_speedup"] = round(r[f"b{b}_tokens_per_s"] / ref[f"b{b}_tokens_per_s"], 2)
    for r in rows:
        r.pop("replies")
    print(f"generation backends, {Path(model).name}, {args.threads or 'default'} threads, "
          f"{args.max_new_tokens} tokens/reply, greedy, first-turn shell-core prompts")
    print(f"{'candidate':<15} {'load s':>7} {'ttft ms':>8} {'b1 tok/s':>9} {'b8 tok/s':>9} "
          f"{'b32 tok/s':>10} {'x b1':>6} {'x b32':>6} {'agree':>7}")
    for r in rows:
        print(f"{r['candidate']:<15} {r['load_s']:>7} {r['ttft_ms']:>8} {r['b1_tokens_per_s']:>9} "
              f"{r['b8_tokens_per_s']:>9} {r['b32_tokens_per_s']:>10} {r['b1_speedup']:>6} "
              f"{r['b32_speedup']:>6} {r['agree']:>4}/{n}")
    if args.json:
        print(json.dumps({"benchmark": "rollout-backends", "model": str(model), "threads": args.threads,
                          "max_new_tokens": args.max_new_tokens, "rows": rows}))
    tmp.cleanup()
    return 0
