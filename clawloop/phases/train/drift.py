"""How far training moved the policy: KL(trained || start) per assistant token, measured on
conversations it trained on (#76, `train.drift`; `clawloop model kl` on any two checkpoints).

Forgetting tracks the KL from the policy training started at, measured on the new task
distribution (Shenfeld et al. 2025, "RL's Razor"), so each train stage measures it on its own
held-in training conversations, teacher-forced (nothing sampled) and exact over the vocabulary:

    KL = sum_v p_new(v) * (log p_new(v) - log p_ref(v))

at each position whose next token SFT trains on, averaged over those tokens (and per
conversation, for the spread). Which tokens those are is SFT's own answer: the conversations are
tokenized by SFT's trainer (`clawloop.phases.train.sft.build_trainer`, the same rows and labels a
train stage trains on: chat template, tools, assistant mask, a `"train": false` turn left out, the
`max_length` cut), which also loads the reference as SFT loads a checkpoint. Both models compute in
float32 on every device (bf16 keeps ~3 significant digits of each activation: a noise floor under
which a small drift could hide; its size is not measured here). Each batch runs the decoders once
and the output head only at the scored positions, HEAD_ROWS at a time, so memory stays two models'
weights plus a few HEAD_ROWS x vocabulary float32 tensors.

Cost on the default Qwen2.5-Coder-0.5B, 2 cores shared (load ~7): 4 conversations of 475 tokens took
53 CPU-s for both models' forward (36 tokens a CPU-second) and 13 CPU-s for loading both; the
default's 16 conversations (475-1024 tokens) come to ~2-4 min on the quiet box, an estimate from
that CPU time. The lower layers that `trainable_layers` froze are the same in both models: running
them once would save about a quarter (not done).
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from clawloop.artifacts.checkpoint import check_base
from clawloop.config.params import DriftParams
from clawloop.config.train import SFTParams
from clawloop.errors import ClawloopError
from clawloop.phases.train.data import Conversation, to_dataset
from clawloop.phases.train.frozen_trunk import _LOGIT_TRANSFORMS
from clawloop.phases.train.replay import CONVERSATIONS, read_conversations

SEED = 0
"""Seed of the draw of `train.drift.conversations` from what the checkpoint trained on."""
BATCH_TOKENS = 4096
"""Most padded tokens of one forward batch (conversations of similar length go together)."""
HEAD_ROWS = 256
"""Positions scored through the output head at once: 256 x Qwen2.5's 151,936 logits are 156 MB of
float32 a tensor, a handful of which live at a time."""
PREFIX = "kl_to_start"
"""The figures' names in train.json."""


@dataclass(frozen=True)
class ConversationKL:
    """One conversation's share: its scored tokens and their mean KL (nats a token)."""

    task_id: str
    tokens: int
    kl: float


@dataclass(frozen=True)
class Drift:
    """KL(checkpoint || reference) on a set of conversations."""

    kl: float
    """Mean over every scored token of all conversations (nats a token)."""
    tokens: int
    conversations: list[ConversationKL]
    seconds: float
    left_out: int = 0
    """Conversations without a scored token after the max_length cut (not measured)."""

    def figures(self) -> dict[str, Any]:
        """train.json's entries (flat numbers for `dvc metrics show`, the list for a report)."""
        per = [c.kl for c in self.conversations]
        return {PREFIX: round(self.kl, 6), f"{PREFIX}_tokens": self.tokens, f"{PREFIX}_conversations": len(per),
                f"{PREFIX}_max": round(max(per), 6), f"{PREFIX}_s": round(self.seconds, 1),
                f"{PREFIX}_per_conversation": [{**asdict(c), "kl": round(c.kl, 6)} for c in self.conversations]}

    def describe(self) -> str:
        per = sorted(c.kl for c in self.conversations)
        median = statistics.median(per)
        left = f", {self.left_out} left out (no scored token within max_length)" if self.left_out else ""
        return (f"KL {self.kl:.4g} nats/token over {self.tokens} assistant tokens of {len(per)} conversations "
                f"(per conversation median {median:.3g}, max {per[-1]:.3g}){left}, {self.seconds:.1f} s")


def sample(conversations: Sequence[Conversation], n: int, seed: int = SEED) -> list[Conversation]:
    """`n` of `conversations` drawn with `seed` (all of them, in order, when there are no more)."""
    convs = list(conversations)
    return convs if n >= len(convs) else random.Random(seed).sample(convs, n)


def sft_rows(reference: Path, conversations: Sequence[Conversation], tools: Sequence[dict[str, Any]] | None,
             max_length: int) -> tuple[Any, list[tuple[int, list[int], list[int]]]]:
    """The reference model as SFT loads it (float32) and SFT's rows of `conversations`: (index in
    `conversations`, token ids, labels with -100 where SFT puts no loss); a conversation the
    max_length cut leaves without a trained token has no row (SFT drops it too)."""
    from clawloop.phases.train.sft import build_trainer

    dataset = to_dataset(conversations, tools).add_column("drift_row", list(range(len(conversations))))
    params = SFTParams(max_length=max_length, precision="float32", frozen_trunk="off")
    with tempfile.TemporaryDirectory(prefix="clawloop-drift-") as tmp:
        trainer = build_trainer(reference, dataset, params, Path(tmp))
    rows = [(r["drift_row"], r["input_ids"], r["labels"]) for r in trainer.train_dataset]
    return trainer.model.eval(), rows


def load_like(checkpoint: Path, like: Any) -> Any:
    """`checkpoint`'s model (safetensors only) in `like`'s dtype on `like`'s device, for inference."""
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(str(checkpoint), dtype=like.dtype, use_safetensors=True)
    except (OSError, ValueError) as e:
        raise ClawloopError(f"{checkpoint}: cannot load model ({str(e).splitlines()[0]})") from None
    return model.to(like.device).eval()


def _check_pair(new: Any, ref: Any, checkpoint: Path, reference: Path) -> None:
    vocab = [m.get_output_embeddings().weight.shape[0] for m in (new, ref)]
    if vocab[0] != vocab[1]:
        raise ClawloopError(f"{checkpoint}: vocabulary of {vocab[0]} tokens, {reference}'s has {vocab[1]}: "
                            "not the same tokenizer")
    for model, path in ((new, checkpoint), (ref, reference)):
        config = model.config.get_text_config()
        if any(getattr(config, k, None) is not None for k in _LOGIT_TRANSFORMS):
            raise ClawloopError(f"{path}: its head transforms its logits (softcapping, scaling): not measured")


def _batches(rows: list[tuple[int, list[int], list[int]]], budget: int) -> list[list[tuple[int, list[int], list[int]]]]:
    """Rows by length, cut into batches of at most `budget` padded tokens (one row at least)."""
    out: list[list[tuple[int, list[int], list[int]]]] = []
    for row in sorted(rows, key=lambda r: len(r[1])):
        if out and len(row[1]) * (len(out[-1]) + 1) <= budget:
            out[-1].append(row)
        else:
            out.append([row])
    return out


def _batch_kl(new: Any, ref: Any, batch: list[tuple[int, list[int], list[int]]], pad: int) -> tuple[Any, Any]:
    """(KL summed per row, scored tokens per row) of one batch: both decoders once, right-padded,
    then both heads at the positions whose next token has a label."""
    import torch

    width = max(len(ids) for _, ids, _ in batch)
    ids = torch.full((len(batch), width), pad, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    for i, (_, row_ids, row_labels) in enumerate(batch):
        ids[i, :len(row_ids)] = torch.tensor(row_ids)
        labels[i, :len(row_labels)] = torch.tensor(row_labels)
    attention = (torch.arange(width)[None, :] < torch.tensor([len(r[1]) for r in batch])[:, None]).long()
    scored = torch.zeros_like(labels, dtype=torch.bool)
    scored[:, :-1] = labels[:, 1:] != -100  # position t predicts token t + 1
    device = ref.device
    hidden = [m.get_decoder()(input_ids=ids.to(device), attention_mask=attention.to(device),
                              use_cache=False).last_hidden_state[scored.to(device)] for m in (new, ref)]
    owner = scored.nonzero()[:, 0].to(device)
    sums = torch.zeros(len(batch), dtype=torch.float64, device=device)
    for start in range(0, owner.numel(), HEAD_ROWS):
        part = slice(start, start + HEAD_ROWS)
        lp_new, lp_ref = (torch.log_softmax(m.get_output_embeddings()(h[part]).float(), dim=-1)
                          for m, h in zip((new, ref), hidden, strict=True))
        kl = (lp_new.exp() * (lp_new - lp_ref)).sum(dim=-1)
        sums.index_add_(0, owner[part], kl.double())
    return sums.cpu(), scored.sum(dim=1)


def measure(checkpoint: Path, reference: Path, conversations: Sequence[Conversation], *,
            tools: Sequence[dict[str, Any]] | None = None, max_length: int = 1024,
            batch_tokens: int = BATCH_TOKENS) -> Drift:
    """KL(checkpoint || reference) per scored token on `conversations` (see the module docstring);
    `tools` as SFT offered them (None: the harness's default tools)."""
    import torch

    t0 = time.time()
    if not conversations:
        raise ClawloopError("no conversations to measure the KL on")
    check_base(checkpoint)
    check_base(reference)
    ref, rows = sft_rows(reference, conversations, tools, max_length)
    if not rows:
        raise ClawloopError(f"none of the {len(conversations)} conversations keeps an assistant token within "
                            f"max_length {max_length}")
    new = load_like(checkpoint, ref)
    _check_pair(new, ref, checkpoint, reference)
    pad = ref.config.pad_token_id if ref.config.pad_token_id is not None else 0
    kl_sum: dict[int, float] = {}
    tokens: dict[int, int] = {}
    with torch.no_grad():
        for batch in _batches(rows, batch_tokens):
            sums, counts = _batch_kl(new, ref, batch, pad)
            for (index, _, _), s, n in zip(batch, sums.tolist(), counts.tolist(), strict=True):
                kl_sum[index], tokens[index] = s, int(n)
    per = [ConversationKL(conversations[i].task_id, tokens[i], kl_sum[i] / tokens[i]) for i in sorted(kl_sum)]
    total = sum(tokens.values())
    return Drift(sum(kl_sum.values()) / total, total, per, time.time() - t0, len(conversations) - len(per))


def skip_reason(checkpoint: Path, figures: dict[str, Any]) -> str | None:
    """Why a train stage's checkpoint is not measured, or None when it is."""
    if not figures.get("steps"):
        return "no weights trained (the checkpoint is the start)"
    if not (checkpoint / CONVERSATIONS).is_file():
        return f"the checkpoint keeps no {CONVERSATIONS} (GRPO alone)"
    return None


def after_training(knob: DriftParams, start: Path, checkpoint: Path, figures: dict[str, Any], *,
                   tools: Sequence[dict[str, Any]] | None, max_length: int) -> dict[str, Any]:
    """train.json's figures of how far this train stage moved the policy from `start`: {} when
    `train.drift.conversations` is 0; `kl_to_start_skipped` with the reason when it cannot be
    measured (a failure is reported there too: the trained checkpoint stands either way)."""
    if not knob.conversations:
        return {}
    why = skip_reason(checkpoint, figures)
    if why is None:
        convs = sample(read_conversations(checkpoint), knob.conversations)
        print(f"[train] KL to the start: {len(convs)} of the trained conversations, {checkpoint} vs {start}",
              flush=True)
        try:
            drift = measure(checkpoint, start, convs, tools=tools, max_length=max_length)
        except (ClawloopError, RuntimeError, MemoryError) as e:
            why = f"failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            print(f"[train] KL to the start {why}", file=sys.stderr)
        else:
            print(f"[train] {drift.describe()}")
            return drift.figures()
    else:
        print(f"[train] KL to the start not measured: {why}")
    return {f"{PREFIX}_skipped": why}
