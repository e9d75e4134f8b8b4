"""Checkpoint plumbing shared by SFT and GRPO: input checks, the OUT.tmp work dir, resuming,
the atomic rename at the end, metric logging.

Layout while training OUT:

    OUT.tmp/run.json          fingerprint of the run (base, data, params); a mismatch starts over
    OUT.tmp/<stage>/          trainer output_dir: checkpoint-N/ dirs, resumed from the last one
    OUT.tmp/<stage>.done/     the stage's final model (sft+grpo chains sft.done into grpo)
    OUT.tmp/final/            model + tokenizer + train_meta.json, renamed to OUT at the end
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawloop.core.io import read_json, write_json
from clawloop.errors import ClawloopError

if TYPE_CHECKING:
    from transformers import TrainerCallback

WEIGHT_PATTERNS = ("*.safetensors",)
"""Weights are read from safetensors only: a pickled checkpoint (pytorch_model*.bin, from a remote
or a download) is refused by name, as the policy loader refuses it (clawloop.policy.load)."""
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def check_base(base: str | Path) -> Path:
    """A usable checkpoint dir: config.json, weights and a tokenizer (checked without loading)."""
    base = Path(base)
    if not base.is_dir():
        raise ClawloopError(f"{base}: checkpoint directory not found")
    if not (base / "config.json").is_file():
        raise ClawloopError(f"{base}: config.json: missing (not a transformers checkpoint)")
    if not any(next(base.glob(p), None) for p in WEIGHT_PATTERNS):
        if next(base.glob("pytorch_model*.bin"), None):
            raise ClawloopError(f"{base}: weights: pickled (pytorch_model*.bin); clawloop trains from *.safetensors "
                                "only (convert the checkpoint with safetensors)")
        raise ClawloopError(f"{base}: weights: no *.safetensors")
    if not any((base / f).is_file() for f in TOKENIZER_FILES):
        raise ClawloopError(f"{base}: tokenizer: missing (expected tokenizer.json or tokenizer_config.json)")
    return base


def load_tokenizer(base: Path) -> Any:
    """The checkpoint's tokenizer with a pad token; errors become ClawloopError."""
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(base))
    except (OSError, ValueError) as e:
        raise ClawloopError(f"{base}: tokenizer: cannot load ({str(e).splitlines()[0]})") from None
    if not getattr(tok, "chat_template", None):
        raise ClawloopError(f"{base}: tokenizer: no chat template")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


class WorkDir:
    """OUT.tmp for one training run, reused across interruptions when the fingerprint matches."""

    def __init__(self, out: str | Path, fingerprint: dict[str, Any]) -> None:
        self.out = Path(out)
        self.tmp = self.out.with_name(self.out.name + ".tmp")
        self.fingerprint = fingerprint
        self.resumed = False

    def open(self) -> WorkDir:
        stamp = self.tmp / "run.json"
        if self.tmp.exists():
            old = read_json(stamp) if stamp.is_file() else None
            if old == self.fingerprint:
                self.resumed = True
            else:
                shutil.rmtree(self.tmp)
        self.tmp.mkdir(parents=True, exist_ok=True)
        write_json(stamp, self.fingerprint)
        return self

    def stage_dir(self, stage: str) -> Path:
        return self.tmp / stage

    def done_dir(self, stage: str) -> Path:
        return self.tmp / f"{stage}.done"

    def is_done(self, stage: str) -> bool:
        return (self.done_dir(stage) / "train_meta.json").is_file()

    @property
    def final(self) -> Path:
        return self.tmp / "final"

    def commit(self, stage_done: Path) -> Path:
        """Move a finished stage's model to OUT (replacing an old OUT) and delete OUT.tmp."""
        old = self.out.with_name(self.out.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        if self.out.exists():
            os.replace(self.out, old)
        os.replace(stage_done, self.out)
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)
        return self.out


def last_checkpoint(output_dir: Path) -> str | None:
    """The newest complete checkpoint-N dir under a trainer output_dir, or None."""
    if not output_dir.is_dir():
        return None
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(output_dir))


def stored_dtypes(checkpoint: Path) -> dict[str, str]:
    """Each tensor's dtype as a checkpoint's safetensors files store it ("BF16", "F32", ...)."""
    from safetensors import safe_open

    dtypes: dict[str, str] = {}
    for path in sorted(Path(checkpoint).glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():  # noqa: SIM118 (safe_open has no __iter__)
                dtypes[name] = f.get_slice(name).get_dtype()
    return dtypes


def frozen_as_stored(model: Any, base: Path) -> dict[str, Any] | None:
    """The state dict with every frozen weight back in the dtype `base` stores it in, or None
    when nothing changes. A frozen weight never moved, so bf16 -> fp32 -> bf16 is exact: a
    top-6-layers SFT of the 630M Qwen writes ~1.7 GB instead of 2.5 GB, and only the weights that
    trained keep fp32."""
    import torch

    names = {"BF16": torch.bfloat16, "F16": torch.float16}
    stored = {k: names[v] for k, v in stored_dtypes(base).items() if v in names}
    frozen = {id(p) for p in model.parameters() if not p.requires_grad}
    if not stored or not frozen:
        return None
    state, cast = model.state_dict(keep_vars=True), {}
    out: dict[str, Any] = {}
    for name, t in state.items():
        dtype = stored.get(name)
        if dtype is not None and id(t) in frozen and t.dtype != dtype:
            # keyed by the parameter so tied weights stay one tensor (save_pretrained drops the copy),
            # cast once (setdefault would cast the 136M-row embedding again for its tied head)
            if id(t) not in cast:
                cast[id(t)] = t.detach().to(dtype)
            out[name] = cast[id(t)]
        else:
            out[name] = t.detach()
    return out if cast else None


def save_final(trainer: Any, tokenizer: Any, dest: Path, meta: dict[str, Any], *,
               base: Path | None = None) -> Path:
    """Save model (LoRA merged), tokenizer and train_meta.json into `dest` (a fresh dir); with
    `base`, frozen weights keep the dtype `base` stores them in (`frozen_as_stored`).

    Call on every rank: sharded (FSDP / DeepSpeed) weights are gathered by `save_model`."""
    acc = trainer.accelerator
    if acc.is_main_process and dest.exists():
        shutil.rmtree(dest)
    acc.wait_for_everyone()
    sharded = getattr(trainer, "is_fsdp_enabled", False) or getattr(trainer, "is_deepspeed_enabled", False)
    if sharded:
        trainer.save_model(str(dest))  # gathers the full state dict, writes on the main process
    elif acc.is_main_process:
        model = acc.unwrap_model(trainer.model)
        state = None
        if hasattr(model, "merge_and_unload"):  # peft: ship plain weights, no adapter indirection
            model = model.merge_and_unload()
        elif base is not None:
            state = frozen_as_stored(model, base)
        model.save_pretrained(str(dest), safe_serialization=True, state_dict=state)
    if acc.is_main_process:
        tokenizer.save_pretrained(str(dest))
        write_json(dest / "train_meta.json", meta)
    acc.wait_for_everyone()
    return dest


def dvclive_callback(logs_dir: Path | None, resume: bool) -> TrainerCallback | None:
    """transformers' DVCLiveCallback writing into `logs_dir` (no DVC experiment, no dvc.yaml edits)."""
    if logs_dir is None:
        return None
    try:
        from dvclive import Live
        from transformers.integrations import DVCLiveCallback
    except ImportError:
        return None
    logs_dir.mkdir(parents=True, exist_ok=True)
    live = Live(dir=str(logs_dir), resume=resume, save_dvc_exp=False, dvcyaml=None, report=None)
    return DVCLiveCallback(live=live, log_model=False)


def final_metrics(trainer: Any, result: Any) -> dict[str, float]:
    """Scalar metrics of a finished run: the trainer's summary plus the last logged values."""
    metrics: dict[str, float] = {}
    for entry in trainer.state.log_history:
        for k, v in entry.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                metrics[k] = float(v)
    for k, v in (result.metrics or {}).items():
        if isinstance(v, int | float):
            metrics[k] = float(v)
    metrics["global_step"] = float(trainer.state.global_step)
    return metrics
