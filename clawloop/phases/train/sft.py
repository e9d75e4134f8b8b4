"""SFT with TRL's SFTTrainer: conversational data with tools, loss on assistant tokens only.

A thin wrapper: builds the SFTConfig from `SFTParams`, resumes from the last checkpoint in the
stage dir, logs to DVCLive, and saves model + tokenizer + train_meta.json into `dest`.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawloop.artifacts.checkpoint import final_metrics, load_tokenizer, save_final
from clawloop.config.train import GRPOParams, LoraParams, SFTParams, resolve_bf16
from clawloop.errors import ClawloopError
from clawloop.phases.train import frozen_trunk

if TYPE_CHECKING:
    import datasets


def peft_config(lora: LoraParams | None, base: Path | None = None, top_layers: int | None = None) -> Any:
    """A peft LoraConfig for causal LM, or None; with `top_layers`, adapters on the top layers of
    `base` only (so the backward pass stops there, and the frozen trunk below can be cached)."""
    if lora is None:
        return None
    from peft import LoraConfig

    targets, layers = lora.target_modules, None
    if top_layers is not None:
        if base is None:
            raise ValueError("peft_config: top_layers needs the base model's path")
        n_layers, linear = layer_linears(base)
        layers = list(range(max(n_layers - top_layers, 0), n_layers))
        if targets == "all-linear":  # peft takes a layer range with a list of names only
            targets = linear
        elif isinstance(targets, str):
            raise ClawloopError(f"lora.target_modules {targets!r} is a pattern: with trainable_layers give a list "
                                "of module names (or all-linear)")
    return LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=targets,
                      task_type="CAUSAL_LM", layers_to_transform=layers,
                      layers_pattern="layers" if layers is not None else None)


def layer_linears(base: Path) -> tuple[int, list[str]]:
    """The decoder's layer count and the names of the linear modules inside a layer (what peft's
    all-linear targets there), read from an empty model built from `base`'s config."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(base))
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    layers = model.get_decoder().layers
    names = sorted({name.rsplit(".", 1)[-1] for name, m in layers[0].named_modules()
                    if isinstance(m, torch.nn.Linear)})
    return len(layers), names


def model_dtype(bf16: bool) -> Any:
    """Weights dtype: bf16 on GPU when mixed precision is on (halves memory); float32 otherwise, and
    always on a CPU: there bf16 is autocast only, the float32 weights are the master copy that the
    optimizer updates (an update of lr 2e-5 is below bf16's resolution of a weight ~1e-2)."""
    import torch

    return torch.bfloat16 if bf16 and torch.cuda.is_available() else torch.float32


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def shared_args(params: SFTParams | GRPOParams, output_dir: Path) -> dict[str, Any]:
    """The TrainingArguments SFT and GRPO set alike: optimisation, checkpoints, logging, device,
    precision (`bf16=True` on a CPU: accelerate wraps the model's forward in
    `torch.autocast("cpu", dtype=torch.bfloat16)`; the weights stay as loaded, float32)."""
    bf16 = resolve_bf16(params.precision)
    return dict(
        output_dir=str(output_dir),
        learning_rate=params.learning_rate,
        max_steps=params.max_steps,
        per_device_train_batch_size=params.per_device_train_batch_size,
        gradient_accumulation_steps=params.gradient_accumulation_steps,
        activation_checkpointing=params.gradient_checkpointing,
        bf16=bf16,
        logging_steps=params.logging_steps,
        save_strategy="steps",
        save_steps=params.save_steps,
        save_total_limit=params.save_total_limit,
        seed=params.seed,
        report_to="none",
        disable_tqdm=True,
        dataloader_pin_memory=_cuda(),
        use_cpu=not _cuda(),
        model_init_kwargs={"dtype": model_dtype(bf16)},
    )


def precision_record(params: SFTParams | GRPOParams, bf16: bool, stage: str) -> dict[str, Any]:
    """What the stage's arithmetic was (train_meta.json's `precision`), also printed as one line: the
    setting, what it resolved to, and the CPU's bf16 flags it followed."""
    from clawloop.config.cpu import native_bf16

    weights = str(model_dtype(bf16)).removeprefix("torch.")
    record = {"setting": params.precision, "bf16_autocast": bf16, "weights": weights, "cpu_native_bf16": native_bf16()}
    how = f"bf16 autocast, {weights} weights" if bf16 else "float32"
    print(f"[{stage}] precision {params.precision}: {how} (CPU native bf16: {'yes' if record['cpu_native_bf16'] else 'no'})")
    return record


def sft_config(params: SFTParams, output_dir: Path) -> Any:
    """TRL SFTConfig for our data: assistant-only loss, tools column, no external reporting."""
    from trl import SFTConfig

    return SFTConfig(
        **shared_args(params, output_dir),
        assistant_only_loss=True,
        num_train_epochs=params.num_train_epochs,
        max_length=params.max_length,
        packing=params.packing,
        warmup_steps=params.warmup_ratio,  # a float < 1 is a ratio of the total steps
        lr_scheduler_type=params.lr_scheduler_type,
        weight_decay=params.weight_decay,
        data_seed=params.seed,
        dataset_num_proc=None,
        include_num_input_tokens_seen="non_padding",  # tokens/s in the progress (training.progress)
    )


def freeze_lower(model: Any, trainable_layers: int, train_head: bool = True) -> int:
    """Leave only the top `trainable_layers` decoder layers and the final norm trainable (an untied
    head too, unless `train_head` is false); returns the trainable parameter count. On a CPU the
    backward pass is most of a step, and it stops at the lowest trainable layer."""
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ClawloopError(f"trainable_layers: {type(model).__name__} has no model.layers to freeze")
    for p in model.parameters():
        p.requires_grad_(False)
    for module in [*list(layers)[-trainable_layers:], getattr(inner, "norm", None)]:
        if module is not None:
            for p in module.parameters():
                p.requires_grad_(True)
    if train_head and not model.config.tie_word_embeddings and model.get_output_embeddings() is not None:
        model.get_output_embeddings().weight.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def trainer_model(base: Path, params: SFTParams | GRPOParams, args: Any) -> Any:
    """What a TRL trainer gets as `model`: the path, or with `trainable_layers` (and no LoRA) the
    model loaded here with its lower layers frozen (`args.model_init_kwargs` then spent)."""
    if params.trainable_layers is None or params.lora is not None:
        return str(base)
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base), **(args.model_init_kwargs or {}))
    freeze_lower(model, params.trainable_layers, params.train_head)
    args.model_init_kwargs = None
    return model


def build_trainer(base: Path, dataset: datasets.Dataset, params: SFTParams, output_dir: Path,
                  *, callbacks: list[Any] | None = None) -> Any:
    """An SFTTrainer ready to train (the dataset is tokenized and labelled here); with
    `trainable_layers` its forward trains from the frozen trunk's cached output where that applies
    (`trainer.frozen_trunk`, clawloop.phases.train.frozen_trunk)."""
    from trl import SFTTrainer

    tokenizer = load_tokenizer(base)
    args = sft_config(params, output_dir)
    trainer = SFTTrainer(
        model=trainer_model(base, params, args),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config(params.lora, base, params.trainable_layers),
        callbacks=callbacks or None,
    )
    trainer.frozen_trunk = frozen_trunk.install(trainer, params)  # None: TRL's path
    return trainer


def trainable_weights(model: Any) -> dict[str, Any]:
    """A copy of the weights that will train, as they are now (before training: the start)."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def interpolate_weights(model: Any, start: dict[str, Any], alpha: float) -> None:
    """WiSE-FT: each weight in `start` set to start + alpha * (now - start), in place."""
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in start:
                p.lerp_(start[name].to(p.dtype), 1.0 - alpha)  # p + (1 - alpha) * (start - p)


def run_sft(base: Path, dataset: datasets.Dataset, params: SFTParams, stage_dir: Path, dest: Path,
            *, logs_dir: Path | None = None, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train `base` on `dataset` (resuming from `stage_dir`), save into `dest`; returns the meta."""
    start = time.time()
    from clawloop.phases.train.progress import training_run  # imports transformers

    with training_run("sft", stage_dir, logs_dir) as (callbacks, resume):
        trainer = build_trainer(base, dataset, params, stage_dir, callbacks=callbacks)
        precision = precision_record(params, bool(trainer.args.bf16), "sft")
        start_weights = trainable_weights(trainer.model) if params.interpolate < 1 else None
        result = trainer.train(resume_from_checkpoint=resume)
    if start_weights is not None:
        interpolate_weights(trainer.model, start_weights, params.interpolate)
    metrics = final_metrics(trainer, result)
    tokens = sum(sum(1 for t in row if t != -100) for row in trainer.train_dataset["labels"])
    metrics["trained_tokens_per_epoch"] = float(tokens)
    metrics["examples"] = float(len(dataset))
    meta = {
        **(meta or {}),
        "method": "sft",
        "base": str(base),
        "steps": trainer.state.global_step,
        "metrics": metrics,
        "wall_time_s": round(time.time() - start, 3),
        "resumed_from": resume,
        "params": params.model_dump(mode="json"),
        "precision": precision,
        # what the frozen-trunk path did (trunk_rows: conversations whose trunk ran); None: TRL's path
        "frozen_trunk": dataclasses.asdict(trainer.frozen_trunk.stats) if trainer.frozen_trunk else None,
    }
    save_final(trainer, trainer.processing_class, dest, meta, base=base)
    return meta
