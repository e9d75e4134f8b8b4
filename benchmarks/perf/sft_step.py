"""SFT step time with `trainable_layers`: TRL's path vs the frozen-trunk path (clawloop/phases/train/frozen_trunk.py).

    .venv/bin/python benchmarks/perf/sft_step.py [--json] [--model DIR|scratch-tiny|scratch-micro]
        [--params params.yaml] [--conversations 16] [--steps 5] [--batch N] [--trainable-layers N]
        [--max-length N] [--threads N] [--bf16 auto|on|off] [--compare-head] [--fp32-reference]

The model is params.yaml's policy of the first iteration (runs/iter-0/policy: Qwen2.5-Coder-0.5B)
unless --model names a checkpoint dir or scratch-tiny / scratch-micro (a from-scratch model
bootstrapped into a temporary dir, to check the script in seconds). SFT params are params.yaml's
`train.sft` (batch 4, max_length 1024, top 6 layers, 10 steps), --batch / --trainable-layers /
--max-length override them. --bf16 off trains in fp32 (auto: bf16 where the CPU has it, as the loop
does): the paths compute the same math, and in fp32 their losses show it; in bf16 each path rounds
its own way (different batching of the trunk), so their losses drift apart by bf16's rounding.

Data: --conversations harness-format conversations as the loop's SFT set has them (system prompt
with the tools, instruction, 1-4 bash calls with their outputs, submit); 16 is about what a probe's
own passes give per iteration. Both paths train the same batches in the same order from the same
weights, 1 + --steps optimizer steps each, in one process: the first step is warm-up and not
timed; the loss is compared at every step. The fast path computes a conversation's trunk output
the first time it sees it (inside a step): its seconds per step leave that time out, and the train
stage's time counts it once per conversation:

    stage (TRL)  = stage steps x baseline s/step
    stage (fast) = conversations the stage sees x trunk s/conversation + stage steps x fast s/step

with the stage steps those of params.yaml (max_steps, or its epochs over the conversations).
--json prints one JSON object as the last line (baseline_s_per_step, fast_s_per_step, speedup,
stage_speedup, max_loss_rel_diff and the details).

--fp32-reference also runs TRL's path in fp32 on the same batches, the exact losses both bf16 paths
round away from: `baseline_vs_fp32_rel_diff` and `fast_vs_fp32_rel_diff` in the JSON say whether the
frozen-trunk path is further from them than TRL's own bf16 path is.

--compare-head also times the fast path with an untied head training and with it frozen
(`train_head`, whatever the params say), same batches: `head_trained_s_per_step`,
`head_frozen_s_per_step`, `head_speedup` in the JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

WORDS = ["amber", "ledger", "harbor", "notes", "summit", "river", "report", "sales", "inventory", "orders",
         "metrics", "cache", "index", "draft", "alpha", "beta", "gamma", "delta", "falcon", "maple"]
OUTPUTS = ["", "total 8\n-rw-r--r-- 1 agent agent 120 Jan  1 00:00 notes.txt\n", "alpha\nbeta\ngamma\n",
           "grep: data.csv: No such file or directory\n", "3 report.txt\n12 sales.csv\n15 total\n"]


def conversations(n: int) -> list[Any]:
    """`n` harness conversations of 1-4 commands (lengths differ: the batches are padded)."""
    from clawloop.core.agent.harness import initial_messages
    from clawloop.core.agent.tool_calls import assistant_message, tool_message
    from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
    from clawloop.phases.train.data import Conversation

    out = []
    for i in range(n):
        f, v = f"{WORDS[i % 20]}{i}.txt", WORDS[(i * 7 + 3) % 20]
        steps = ["ls -la", f"grep -c {v} *.txt", f"echo {v} > {f}", f"cat {f}"][: 1 + i % 4]
        task = Task(instruction=f"Write {v} into {f}, then show it.", skill="files",
                    verifier=Verifier(files={"test.sh": FileSpec(content="echo 1 > /logs/verifier/reward.txt")}),
                    solution=Solution(steps=steps))
        msgs = initial_messages(task)
        for j, cmd in enumerate(steps):
            msgs += [assistant_message(cmd), tool_message(OUTPUTS[(i + j) % len(OUTPUTS)] + "[exit code 0]")]
        out.append(Conversation(task.id, [*msgs, assistant_message(None)], "reference"))
    return out


class StepTimer:
    """Trainer callback: wall time of every optimizer step and the trunk time inside it."""

    def __new__(cls, trainer: Any = None) -> Any:
        from transformers import TrainerCallback

        class _Timer(TrainerCallback):
            def __init__(self) -> None:
                self.times: list[float] = []
                self.trunk: list[float] = []
                self.trainer: Any = None
                self._t = self._trunk = 0.0

            def _trunk_s(self) -> float:
                ft = getattr(self.trainer, "frozen_trunk", None)
                return ft.stats.trunk_s if ft is not None else 0.0

            def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                self._t, self._trunk = time.perf_counter(), self._trunk_s()

            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                self.times.append(time.perf_counter() - self._t)
                self.trunk.append(self._trunk_s() - self._trunk)

        return _Timer()


def run(model: Path, work: Path, sft: Any, data: Any, mode: str, steps: int, tag: str | None = None) -> dict[str, Any]:
    """1 + `steps` optimizer steps with frozen_trunk `mode`: step times, losses, trunk figures."""
    from clawloop.phases.train import frozen_trunk
    from clawloop.phases.train.sft import build_trainer

    params = sft.model_copy(update={"max_steps": steps + 1, "logging_steps": 1, "save_steps": 10_000,
                                    "frozen_trunk": mode})
    timer = StepTimer()
    trainer = build_trainer(model, data, params, work / (tag or mode), callbacks=[timer])
    timer.trainer = trainer
    ft = trainer.frozen_trunk
    if mode != "off" and ft is None:
        reason = frozen_trunk.why_not(params, trainer.model, packing=params.packing)
        raise SystemExit(f"the frozen-trunk path does not apply: {reason}")
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    net = [t - k for t, k in zip(timer.times, timer.trunk, strict=True)][1:]
    out = {"mode": mode, "steps": len(net), "s_per_step": sum(net) / len(net), "losses": losses,
           "step_s": [round(t, 3) for t in timer.times], "trunk_in_step_s": [round(t, 3) for t in timer.trunk],
           "tokens_per_example": sum(len(r) for r in trainer.train_dataset["input_ids"]) / len(trainer.train_dataset),
           "examples": len(trainer.train_dataset)}
    if ft is not None:
        out.update(trunk_rows=ft.stats.trunk_rows, trunk_s=ft.stats.trunk_s, fast_calls=ft.stats.fast_calls,
                   fallback_calls=ft.stats.fallback_calls, first_trainable_layer=ft.first,
                   layers=len(ft.layers))
    del trainer, ft
    gc.collect()
    return out


def stage_steps(sft: Any, examples: int) -> int:
    """Optimizer steps of the default's train stage on `examples` conversations."""
    if sft.max_steps > 0:
        return sft.max_steps
    per_epoch = math.ceil(examples / (sft.per_device_train_batch_size * sft.gradient_accumulation_steps))
    return math.ceil(sft.num_train_epochs * per_epoch)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(ROOT / "runs/iter-0/policy"),
                    help="checkpoint dir, or scratch-tiny / scratch-micro (bootstrapped here)")
    ap.add_argument("--params", type=Path, default=ROOT / "params.yaml", help="its train.sft section is used")
    ap.add_argument("--conversations", type=int, default=16)
    ap.add_argument("--steps", type=int, default=5, help="timed steps (after one warm-up step)")
    ap.add_argument("--batch", type=int, help="per_device_train_batch_size (default: the params')")
    ap.add_argument("--trainable-layers", type=int, help="(default: the params')")
    ap.add_argument("--max-length", type=int, help="(default: the params')")
    ap.add_argument("--threads", type=int, help="torch CPU threads (default: torch's, one per core)")
    ap.add_argument("--bf16", choices=["auto", "on", "off"], default="auto",
                    help="auto: the params' (bf16 where the hardware has it); off: fp32")
    ap.add_argument("--compare-head", action="store_true",
                    help="also time the fast path with the untied head trained and frozen (train_head)")
    ap.add_argument("--fp32-reference", action="store_true",
                    help="also run TRL's path in fp32: how far each bf16 path's losses are from the exact ones")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    from clawloop.config.params import load_params
    from clawloop.config.train import resolve_bf16
    from clawloop.phases.train.data import to_dataset

    sft = load_params(args.params).train.options().sft
    over = {k: v for k, v in (("per_device_train_batch_size", args.batch), ("trainable_layers", args.trainable_layers),
                              ("max_length", args.max_length)) if v is not None}
    if args.bf16 != "auto":
        over["precision"] = "bfloat16" if args.bf16 == "on" else "float32"
    sft = sft.model_copy(update=over)
    if sft.trainable_layers is None:
        raise SystemExit("trainable_layers: not set (in the params or --trainable-layers)")
    data = to_dataset(conversations(args.conversations))

    with tempfile.TemporaryDirectory(prefix="clawloop-bench-sft-step-") as tmp:
        work = Path(tmp)
        model = Path(args.model)
        if args.model in ("scratch-tiny", "scratch-micro"):
            from clawloop.bootstrap.scratch import bootstrap

            model = work / args.model
            bootstrap(model, size=args.model.removeprefix("scratch-"), seed=0, corpus_pairs=2000)
        elif not (model / "config.json").is_file():
            raise SystemExit(f"{model}: no checkpoint (run the loop's first iteration, or pass --model)")
        base = run(model, work, sft, data, "off", args.steps)
        fast = run(model, work, sft, data, "auto", args.steps)
        exact = (run(model, work, sft.model_copy(update={"precision": "float32"}), data, "off", args.steps, tag="fp32")
                 if args.fp32_reference else None)
        heads = ({on: run(model, work, sft.model_copy(update={"train_head": on}), data, "auto", args.steps,
                          tag=f"head-{on}") for on in (True, False)} if args.compare_head else {})

    def rel_diff(a: list[float], b: list[float]) -> list[float]:
        return [abs(y - x) / abs(x) for x, y in zip(a, b, strict=True)]

    rel = rel_diff(base["losses"], fast["losses"])
    n_stage = stage_steps(sft, base["examples"])
    seen = min(base["examples"], n_stage * sft.per_device_train_batch_size * sft.gradient_accumulation_steps)
    trunk_per_conv = fast["trunk_s"] / max(fast["trunk_rows"], 1)
    base_stage = n_stage * base["s_per_step"]
    fast_stage = seen * trunk_per_conv + n_stage * fast["s_per_step"]
    result = {
        "benchmark": "sft_step", "model": str(args.model), "threads": torch.get_num_threads(),
        "bf16": resolve_bf16(sft.precision), "batch": sft.per_device_train_batch_size, "max_length": sft.max_length,
        "trainable_layers": sft.trainable_layers, "layers": fast["layers"], "conversations": base["examples"],
        "tokens_per_example": round(base["tokens_per_example"], 1), "timed_steps": args.steps,
        "baseline_s_per_step": round(base["s_per_step"], 4), "fast_s_per_step": round(fast["s_per_step"], 4),
        "speedup": round(base["s_per_step"] / fast["s_per_step"], 3),
        "trunk_s_per_conversation": round(trunk_per_conv, 4), "stage_steps": n_stage,
        "stage_conversations": seen, "baseline_stage_s": round(base_stage, 2), "fast_stage_s": round(fast_stage, 2),
        "stage_speedup": round(base_stage / fast_stage, 3), "max_loss_rel_diff": max(rel),
        "baseline_losses": base["losses"], "fast_losses": fast["losses"],
        "fast_calls": fast["fast_calls"], "fallback_calls": fast["fallback_calls"],
        "baseline_step_s": base["step_s"], "fast_step_s": fast["step_s"], "fast_trunk_in_step_s": fast["trunk_in_step_s"],
    }
    if exact is not None:
        result.update(fp32_losses=exact["losses"],
                      baseline_vs_fp32_rel_diff=max(rel_diff(exact["losses"], base["losses"])),
                      fast_vs_fp32_rel_diff=max(rel_diff(exact["losses"], fast["losses"])))
    if heads:
        on, off = heads[True], heads[False]
        result.update(head_trained_s_per_step=round(on["s_per_step"], 4), head_frozen_s_per_step=round(off["s_per_step"], 4),
                      head_speedup=round(on["s_per_step"] / off["s_per_step"], 3),
                      head_trained_losses=on["losses"], head_frozen_losses=off["losses"])
    print(f"model={args.model} threads={result['threads']} bf16={result['bf16']} batch={result['batch']} "
          f"max_length={result['max_length']} layers={result['layers']} trainable={result['trainable_layers']} "
          f"conversations={result['conversations']} ({result['tokens_per_example']} tokens each)")
    print(f"{'path':10s} {'s/step':>9s} {'stage s':>9s}  losses")
    for name, r, stage in (("TRL", base, base_stage), ("frozen", fast, fast_stage)):
        print(f"{name:10s} {r['s_per_step']:9.4f} {stage:9.2f}  {' '.join(f'{x:.4f}' for x in r['losses'])}")
    print(f"speedup {result['speedup']:.2f}x a step, {result['stage_speedup']:.2f}x the stage ({n_stage} steps, "
          f"trunk {trunk_per_conv:.3f} s x {seen} conversations); max loss rel diff {result['max_loss_rel_diff']:.2e}")
    if exact is not None:
        print(f"{'TRL fp32':10s} {exact['s_per_step']:9.4f} {'':9s}  {' '.join(f'{x:.4f}' for x in exact['losses'])}")
        print(f"max loss rel diff from the fp32 losses: TRL {result['baseline_vs_fp32_rel_diff']:.2e}, "
              f"frozen trunk {result['fast_vs_fp32_rel_diff']:.2e}")
    if heads:
        print(f"head (fast path): trained {result['head_trained_s_per_step']:.4f} s/step, frozen "
              f"{result['head_frozen_s_per_step']:.4f} s/step: {result['head_speedup']:.2f}x a step")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
