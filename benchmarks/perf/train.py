"""Training speed on this machine: the tiny bootstrap model's SFT tokens/s and GRPO s/step, or
(--sft) the default SFT stage in bf16 autocast against float32 on the same batches.

    .venv/bin/python benchmarks/perf/train.py [--json] [--model DIR] [--sft-steps 6] [--grpo-steps 2] [--threads N]
    .venv/bin/python benchmarks/perf/train.py --sft [--json] [--model DIR] [--params params.yaml]
        [--sft-steps 8] [--conversations N] [--threads N]

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

--sft: the train stage's precision choice (`train.sft.precision`, clawloop/config/train.py). The
SFT params are params.yaml's `train.sft` (the default: top 12 of 24 layers on the frozen-trunk path,
batch 4, max_length 1024, lr 2e-5) with max_steps = 1 + --sft-steps; the model is --model, else
runs/iter-0/policy, else params.yaml's `model.base` built once into ~/.cache/clawloop/bench-bases.
Data: harness conversations of 1-4 commands (sft_step.py's), --conversations of them (default
batch x steps, so that each step brings new conversations and their trunk passes, as the stage's
~390 conversations over 120 steps do). Two runs from the same weights with the same seed, hence the
same batches in the same order: precision float32, then bfloat16 (autocast, float32 master
weights). The first step of each is warm-up and not timed; each timed step is split into the
frozen trunk's passes, the optimizer step (AdamW in float32 in both) and the rest (forward and
backward of the trained layers and the head). `sft_speedup_vs_fp32` = float32 s/step / bf16
s/step; `final_loss_rel_diff` = |bf16 - fp32| / fp32 of the last step's loss (the same batch in
both), `max_loss_rel_diff` over every step; the loss curves are in `sft.fp32_losses` /
`sft.bf16_losses`.

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
                  **{"precision": "float32", **params})
    timer = StepTimer()
    trainer = build_trainer(model, ds, p, work / name, callbacks=[timer])
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
                   max_completion_length=64, max_turns=4, save_steps=10_000, precision="float32")
    timer = StepTimer()
    trainer, env_cls = build_trainer(model, tasks, p, work / name, backend="bwrap", callbacks=[timer])
    try:
        trainer.train()
    finally:
        env_cls.close_all()
    timed = timer.times[1:] or timer.times
    return {"config": name, "generation_batch": batch, "num_generations": generations, "steps": len(timed),
            "step_s": round(sum(timed) / len(timed), 3), "rollouts": sum(env_cls.stats.values())}


class PhaseTimer:
    """Trainer callback: per optimizer step, its wall time, the frozen trunk's passes inside it and
    the optimizer step (clip + AdamW) inside it."""

    def __new__(cls) -> Any:
        from transformers import TrainerCallback

        class _Timer(TrainerCallback):
            def __init__(self) -> None:
                self.step: list[float] = []
                self.trunk: list[float] = []
                self.optimizer: list[float] = []
                self.trainer: Any = None
                self._t = self._trunk = self._opt = 0.0

            def _trunk_s(self) -> float:
                ft = getattr(self.trainer, "frozen_trunk", None)
                return ft.stats.trunk_s if ft is not None else 0.0

            def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                self._t, self._trunk = time.perf_counter(), self._trunk_s()

            def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                self._opt = time.perf_counter()

            def on_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                self.optimizer.append(time.perf_counter() - self._opt)

            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                self.step.append(time.perf_counter() - self._t)
                self.trunk.append(self._trunk_s() - self._trunk)

        return _Timer()


def default_model(params_file: Path) -> Path:
    """runs/iter-0/policy when the loop built it, else params.yaml's model.base built once into a cache."""
    policy = ROOT / "runs/iter-0/policy"
    if (policy / "config.json").is_file():
        return policy
    from clawloop.bootstrap.base import make_base
    from clawloop.config.params import load_params

    m = load_params(params_file).model
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "clawloop/bench-bases" / m.base
    if not (cache / "config.json").is_file():
        print(f"building {m.base} into {cache} (once)", file=sys.stderr)
        make_base(m.base, cache, seed=m.seed, bootstrap=m.bootstrap, pretrain=m.pretrain)
    return cache


def sft_precision_run(model: Path, work: Path, sft: Any, data: Any, precision: str) -> dict[str, Any]:
    """1 + the params' max_steps - 1 timed SFT steps in `precision`: step times split, losses, weight dtypes."""
    import gc

    from clawloop.phases.train.sft import build_trainer

    params = sft.model_copy(update={"precision": precision})
    timer = PhaseTimer()
    trainer = build_trainer(model, data, params, work / precision, callbacks=[timer])
    timer.trainer = trainer
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    trained = {str(p.dtype) for p in trainer.model.parameters() if p.requires_grad}
    step, trunk, opt = (timer.step[1:], timer.trunk[1:], timer.optimizer[1:])  # the first step is warm-up
    n = len(step)
    out = {"precision": precision, "bf16_autocast": bool(trainer.args.bf16), "trained_weight_dtypes": sorted(trained),
           "steps": n, "s_per_step": sum(step) / n, "trunk_s_per_step": sum(trunk) / n,
           "optimizer_s_per_step": sum(opt) / n, "train_wall_s": round(wall, 2),
           "frozen_trunk": trainer.frozen_trunk is not None, "losses": losses,
           "step_s": [round(t, 3) for t in timer.step], "trunk_in_step_s": [round(t, 3) for t in timer.trunk],
           "optimizer_in_step_s": [round(t, 3) for t in timer.optimizer]}
    out["rest_s_per_step"] = out["s_per_step"] - out["trunk_s_per_step"] - out["optimizer_s_per_step"]
    del trainer
    gc.collect()
    return out


def bench_sft_precision(args: argparse.Namespace) -> dict[str, Any]:
    """float32 and bf16 autocast on the default SFT setup, the same batches: see the module docstring."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sft_step import conversations as varied_conversations

    from clawloop.config.cpu import native_bf16
    from clawloop.config.params import load_params
    from clawloop.phases.train.data import to_dataset

    steps = args.sft_steps or 8
    sft = load_params(args.params).train.options().sft
    sft = sft.model_copy(update={"max_steps": steps + 1, "logging_steps": 1, "save_steps": 100_000})
    n_conv = args.conversations or sft.per_device_train_batch_size * sft.gradient_accumulation_steps * (steps + 1)
    data = to_dataset(varied_conversations(n_conv))
    model = args.model or default_model(args.params)
    with tempfile.TemporaryDirectory(prefix="clawloop-bench-train-sft-") as tmp:
        fp32 = sft_precision_run(model, Path(tmp), sft, data, "float32")
        bf16 = sft_precision_run(model, Path(tmp), sft, data, "bfloat16")

    def rel(a: float, b: float) -> float:
        return abs(b - a) / abs(a)

    rels = [rel(a, b) for a, b in zip(fp32["losses"], bf16["losses"], strict=True)]
    result = {
        "benchmark": "train_sft_precision", "model": str(model), "threads": torch.get_num_threads(),
        "native_bf16": native_bf16(), "batch": sft.per_device_train_batch_size, "max_length": sft.max_length,
        "trainable_layers": sft.trainable_layers, "train_head": sft.train_head, "learning_rate": sft.learning_rate,
        "conversations": n_conv, "timed_steps": steps,
        "fp32_s_per_step": round(fp32["s_per_step"], 3), "bf16_s_per_step": round(bf16["s_per_step"], 3),
        "sft_speedup_vs_fp32": round(fp32["s_per_step"] / bf16["s_per_step"], 3),
        "final_loss_rel_diff": round(rels[-1], 5), "max_loss_rel_diff": round(max(rels), 5),
        "sft": {"fp32_losses": fp32["losses"], "bf16_losses": bf16["losses"],
                "loss_rel_diffs": [round(x, 5) for x in rels],
                "runs": [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in (fp32, bf16)]},
    }
    print(f"model={model} threads={result['threads']} native_bf16={result['native_bf16']} batch={result['batch']} "
          f"layers trained={sft.trainable_layers} head trained={sft.train_head} conversations={n_conv} "
          f"timed steps={steps}")
    print(f"{'precision':10s} {'s/step':>8s} {'trunk':>8s} {'optim':>8s} {'rest':>8s}  losses")
    for r in (fp32, bf16):
        print(f"{r['precision']:10s} {r['s_per_step']:8.3f} {r['trunk_s_per_step']:8.3f} {r['optimizer_s_per_step']:8.3f} "
              f"{r['rest_s_per_step']:8.3f}  {' '.join(f'{x:.4f}' for x in r['losses'])}")
    print(f"bf16 autocast: {result['sft_speedup_vs_fp32']:.2f}x float32's speed a step; final loss "
          f"{result['final_loss_rel_diff']:.2%} from float32's (max over the steps {result['max_loss_rel_diff']:.2%}); "
          f"trained weights {bf16['trained_weight_dtypes']}")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sft", action="store_true",
                    help="the default SFT setup in bf16 autocast against float32, same batches (no tiny model, no GRPO)")
    ap.add_argument("--model", type=Path,
                    help="checkpoint dir (default: a tiny bootstrap model; with --sft: the default base)")
    ap.add_argument("--params", type=Path, default=ROOT / "params.yaml", help="--sft: its train.sft and model.base")
    ap.add_argument("--sft-steps", type=int, help="timed SFT steps (default 6; with --sft 8)")
    ap.add_argument("--conversations", type=int, help="--sft: conversations (default: batch x (steps + 1))")
    ap.add_argument("--grpo-steps", type=int, default=2)
    ap.add_argument("--threads", type=int, help="torch CPU threads (default: torch's, one per core)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    if args.sft:
        result = bench_sft_precision(args)
        if args.json:
            print(json.dumps(result))
        return

    from clawloop.config.cpu import native_bf16

    sft_steps = args.sft_steps or 6
    with tempfile.TemporaryDirectory(prefix="clawloop-bench-train-") as tmp:
        work = Path(tmp)
        model = args.model
        if model is None:
            from clawloop.bootstrap.scratch import bootstrap

            model = work / "tiny"
            bootstrap(model, size="tiny", seed=0, corpus_pairs=2000)
        sft = [
            bench_sft(model, work, "fp32 batch 1 (baseline)", sft_steps, per_device_train_batch_size=1),
            bench_sft(model, work, "fp32 batch 16", sft_steps, per_device_train_batch_size=16),
            bench_sft(model, work, "bf16 batch 16", max(2, sft_steps // 3), per_device_train_batch_size=16,
                      precision="bfloat16"),
            bench_sft(model, work, "fp32 batch 16 + grad ckpt", sft_steps, per_device_train_batch_size=16,
                      gradient_checkpointing=True),
        ]
        grpo = [bench_grpo(model, work, "G=2 batch 4", args.grpo_steps, 2, 4),
                bench_grpo(model, work, "G=4 batch 8", args.grpo_steps, 4, 8)]
    base = sft[0]["tokens_per_s"]
    print(f"threads={torch.get_num_threads()} native_bf16={native_bf16()} cuda={torch.cuda.is_available()}")
    print(f"{'SFT config':28s} {'step s':>8s} {'tokens/s':>10s} {'trained/s':>10s} {'vs base':>8s}")
    for r in sft:
        print(f"{r['config']:28s} {r['step_s']:8.3f} {r['tokens_per_s']:10.1f} {r['trained_tokens_per_s']:10.1f} "
              f"{r['tokens_per_s'] / base:7.2f}x")
    print(f"{'GRPO config':28s} {'s/step':>8s} {'rollouts':>10s}")
    for r in grpo:
        print(f"{r['config']:28s} {r['step_s']:8.3f} {r['rollouts']:10d}")
    if args.json:
        print(json.dumps({"benchmark": "train", "threads": torch.get_num_threads(),
                          "native_bf16": native_bf16(), "sft": sft, "grpo": grpo,
                          "sft_tokens_per_s": sft[1]["tokens_per_s"], "grpo_s_per_step": grpo[0]["step_s"]}))


if __name__ == "__main__":
    main()
