"""Training speed of the tiny bootstrap model on this machine: SFT tokens/s and GRPO s/step.

    .venv/bin/python benchmarks/perf/train.py [--json] [--model DIR] [--sft-steps 6] [--grpo-steps 2] [--threads N]

On a CPU shared with other jobs use --threads 1 (or OMP_WAIT_POLICY=PASSIVE): OpenMP threads
spin-waiting for a busy core made 2 threads 4-6x slower than 1 here.

SFT: harness-format conversations (system + tools + instruction + 2 bash calls + submit,
~470 tokens each) through `clawloop.phases.train.sft.build_trainer`, assistant-only loss. Rows, in
the same run: batch 1 (baseline) and batch 16 in fp32; bf16 autocast at batch 16 (on a CPU
without native bf16 it is emulated: expect it much slower); gradient checkpointing at batch 16.
The first step of each run is warm-up and not timed. tokens/s counts every input token (prompt
included); trained/s only the assistant tokens that carry loss.

GRPO: `clawloop.phases.train.grpo` on the multi-turn environment path with real bwrap sandboxes
(setup, tool calls, verifier per rollout), max_completion_length 64, at generation batch 4 (G=2)
and 8 (G=4): seconds per optimizer step, first step untimed.

--json prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

WORDS = ["amber", "ledger", "harbor", "notes", "summit", "river", "report", "sales", "inventory", "orders", "metrics", "cache", "index", "draft", "alpha", "beta", "gamma", "delta", "falcon", "maple", "cedar", "quartz", "violet", "copper"]


def make_tasks(n: int, verifier: str | None = None) -> list[Any]:
    from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier

    test = verifier or ('if [ "$(cat /workspace/{f} 2>/dev/null)" = "{v}" ]; then echo 1; else echo 0; fi '
                        '> /logs/verifier/reward.txt')
    out = []
    for i in range(n):
        f, v = f"{WORDS[i % 24]}{i}.txt", WORDS[(i * 7 + 3) % 24]
        out.append(Task(instruction=f"Write {v} into {f}.", skill="files",
                        verifier=Verifier(files={"test.sh": FileSpec(content=test.format(f=f, v=v))}),
                        solution=Solution(steps=["ls -la", f"echo {v} > {f}"])))
    return out


def conversations(n: int) -> list[Any]:
    from clawloop.core.agent.harness import initial_messages
    from clawloop.core.agent.tool_calls import assistant_message, tool_message
    from clawloop.phases.train.data import Conversation

    out = []
    for t in make_tasks(n):
        msgs = initial_messages(t)
        for cmd in t.solution.steps:
            msgs += [assistant_message(cmd), tool_message("total 0\n[exit code 0]")]
        out.append(Conversation(t.id, [*msgs, assistant_message(None)], "reference"))
    return out


class StepTimer:
    """Trainer callback: wall time of every optimizer step."""

    def __new__(cls) -> Any:
        from transformers import TrainerCallback

        class _Timer(TrainerCallback):
            def __init__(self) -> None:
                self.times: list[float] = []
                self._t = 0.0

            def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                self._t = time.perf_counter()

            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                self.times.append(time.perf_counter() - self._t)

        return _Timer()


def bench_sft(model: Path, work: Path, name: str, steps: int, **params: Any) -> dict[str, Any]:
    from clawloop.config.train import SFTParams
    from clawloop.phases.train.data import to_dataset
    from clawloop.phases.train.sft import build_trainer

    bs = params.get("per_device_train_batch_size", 16)
    ds = to_dataset(conversations(max(bs * (steps + 1), 16)))
    p = SFTParams(max_steps=steps + 1, save_steps=10_000, logging_steps=1_000, warmup_ratio=0.0,
                  **{k: v for k, v in params.items() if k != "bf16"})
    timer = StepTimer()
    trainer = build_trainer(model, ds, p, work / name, callbacks=[timer], bf16=params.get("bf16", False))
    trainer.train()
    rows = trainer.train_dataset
    per_ex = sum(len(r) for r in rows["input_ids"]) / len(rows)
    trained = sum(sum(1 for x in r if x != -100) for r in rows["labels"]) / len(rows)
    timed = timer.times[1:] or timer.times
    step_s = sum(timed) / len(timed)
    return {"config": name, "batch": bs, "steps": len(timed), "step_s": round(step_s, 3),
            "tokens_per_s": round(bs * per_ex / step_s, 1), "trained_tokens_per_s": round(bs * trained / step_s, 1),
            "tokens_per_example": round(per_ex, 1)}


def bench_grpo(model: Path, work: Path, name: str, steps: int, generations: int, batch: int) -> dict[str, Any]:
    from clawloop.config.train import GRPOParams
    from clawloop.phases.train.grpo import build_trainer

    tasks = make_tasks(8, verifier="echo $((RANDOM % 2)) > /logs/verifier/reward.txt")
    p = GRPOParams(max_steps=steps + 1, num_generations=generations, per_device_train_batch_size=batch,
                   max_completion_length=64, max_turns=4, save_steps=10_000, bf16=False)
    timer = StepTimer()
    trainer, env_cls = build_trainer(model, tasks, p, work / name, backend="bwrap", callbacks=[timer])
    try:
        trainer.train()
    finally:
        env_cls.close_all()
    timed = timer.times[1:] or timer.times
    return {"config": name, "generation_batch": batch, "num_generations": generations, "steps": len(timed),
            "step_s": round(sum(timed) / len(timed), 3), "rollouts": sum(env_cls.stats.values())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, help="checkpoint dir (default: bootstrap a tiny model)")
    ap.add_argument("--sft-steps", type=int, default=6)
    ap.add_argument("--grpo-steps", type=int, default=2)
    ap.add_argument("--threads", type=int, help="torch CPU threads (default: torch's, one per core)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    from clawloop.config.train import cpu_has_native_bf16

    with tempfile.TemporaryDirectory(prefix="clawloop-bench-train-") as tmp:
        work = Path(tmp)
        model = args.model
        if model is None:
            from clawloop.bootstrap.scratch import bootstrap

            model = work / "tiny"
            bootstrap(model, size="tiny", seed=0, corpus_pairs=2000)
        sft = [
            bench_sft(model, work, "fp32 batch 1 (baseline)", args.sft_steps, per_device_train_batch_size=1),
            bench_sft(model, work, "fp32 batch 16", args.sft_steps, per_device_train_batch_size=16),
            bench_sft(model, work, "bf16 batch 16", max(2, args.sft_steps // 3), per_device_train_batch_size=16,
                      bf16=True),
            bench_sft(model, work, "fp32 batch 16 + grad ckpt", args.sft_steps, per_device_train_batch_size=16,
                      gradient_checkpointing=True),
        ]
        grpo = [bench_grpo(model, work, "G=2 batch 4", args.grpo_steps, 2, 4),
                bench_grpo(model, work, "G=4 batch 8", args.grpo_steps, 4, 8)]
    base = sft[0]["tokens_per_s"]
    print(f"threads={torch.get_num_threads()} native_bf16={cpu_has_native_bf16()} cuda={torch.cuda.is_available()}")
    print(f"{'SFT config':28s} {'step s':>8s} {'tokens/s':>10s} {'trained/s':>10s} {'vs base':>8s}")
    for r in sft:
        print(f"{r['config']:28s} {r['step_s']:8.3f} {r['tokens_per_s']:10.1f} {r['trained_tokens_per_s']:10.1f} "
              f"{r['tokens_per_s'] / base:7.2f}x")
    print(f"{'GRPO config':28s} {'s/step':>8s} {'rollouts':>10s}")
    for r in grpo:
        print(f"{r['config']:28s} {r['step_s']:8.3f} {r['rollouts']:10d}")
    if args.json:
        print(json.dumps({"benchmark": "train", "threads": torch.get_num_threads(),
                          "native_bf16": cpu_has_native_bf16(), "sft": sft, "grpo": grpo,
                          "sft_tokens_per_s": sft[1]["tokens_per_s"], "grpo_s_per_step": grpo[0]["step_s"]}))


if __name__ == "__main__":
    main()
