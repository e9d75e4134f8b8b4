"""Frozen-trunk SFT: with `trainable_layers` (their weights, or LoRA adapters on them) the
embeddings and the lower decoder layers never change during a train stage, so their output, the
hidden states entering the lowest trainable layer, is computed once per conversation (batched,
without grad, kept in memory) and every step runs only the top layers from it; the head (final
norm + lm_head) is scored only at the positions whose next token carries loss (on a CPU TRL scores
every position).

A thin layer over TRL: SFTTrainer.compute_loss calls `model(**batch, fused_lm_head=True)` (TRL's
fused LM head, `trl.trainer.utils.add_fused_lm_head`). `install` puts a forward in front of that
one which answers such training calls itself and returns the same FusedCausalLMOutput (loss, the
log-probabilities, entropy and top-1 that feed `entropy` and `mean_token_accuracy`); every other
call (eval, generate, a batch it cannot serve) goes to TRL's. The top layers run through the
backbone's own forward (its causal mask, rotary position embeddings, layer types), given the cached
trunk output as `inputs_embeds` and with the frozen layers passed through. The model stays the
trainer's model, so checkpoints save the real weights.

The trunk output of a row is looked up by its exact token ids (the trainer shuffles). Same loss and
gradients as TRL's path up to float rounding: tests/test_frozen_trunk.py; speed:
benchmarks/perf/sft_step.py.
"""

from __future__ import annotations

import functools
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

CACHE_BUDGET_BYTES = 4 << 30
"""Most memory the trunk outputs of a stage may take (all conversations at once); a larger data
set trains on TRL's path."""

HEAD_OUTPUTS = ("log_probs", "entropy", "is_top1")
"""What SFTTrainer's fused head computes (its loss and its `entropy` and `mean_token_accuracy`)."""

SERVED_KWARGS = frozenset({"input_ids", "attention_mask", "use_cache"})
"""The inputs of a padded SFT batch; anything else (position_ids of padding-free packing, ...) goes
to TRL's forward."""

_LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "output_multiplier", "lm_head_multiplier",
                     "logits_scaling")


@dataclass
class TrunkStats:
    """What the fast path did: `trunk_rows` counts trunk computations (one per distinct
    conversation when it works), `fast_calls` the training forwards it served."""

    fast_calls: int = 0
    fallback_calls: int = 0
    trunk_rows: int = 0
    trunk_passes: int = 0
    trunk_s: float = 0.0


class _Stop(Exception):
    """Ends the backbone's forward at the first trainable layer (its input is all the trunk is for)."""


def _passthrough(hidden_states: Any, *args: Any, **kwargs: Any) -> Any:
    return hidden_states


def unwrapped(model: Any) -> Any:
    """The causal LM itself: a peft model's base model (its adapters in place), else `model`."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def why_not(params: Any, model: Any, *, packing: bool = False, lengths: list[int] | None = None) -> str | None:
    """Why the fast path does not apply to this SFT run, or None when it does."""
    import torch

    model = unwrapped(model)
    if getattr(params, "frozen_trunk", "auto") == "off":
        return "frozen_trunk: off"
    if params.trainable_layers is None:
        return "all layers train"
    if torch.cuda.is_available():
        return "GPU (TRL's fused head scores only the loss positions there)"
    if packing:
        return "packing"
    backbone = getattr(model, "base_model", None)
    layers = getattr(backbone, "layers", None)
    if layers is None or model.get_output_embeddings() is None:
        return f"{type(model).__name__}: no base_model.layers or output embeddings"
    config = model.config.get_text_config()
    if any(getattr(config, k, None) is not None for k in _LOGIT_TRANSFORMS):
        return "the head transforms its logits"
    if getattr(config, "output_router_logits", False):
        return "MoE router logits"
    k = max(len(layers) - params.trainable_layers, 0)
    trunk = [p for n, p in backbone.named_parameters()
             if not any(n.startswith(f"layers.{i}.") for i in range(k, len(layers))) and not n.startswith("norm.")]
    if any(p.requires_grad for p in trunk):
        return "a trunk weight trains"
    dropout = [sub.p for top in [backbone.embed_tokens, *layers[:k]] for sub in top.modules()
               if isinstance(sub, torch.nn.Dropout)]
    if getattr(config, "attention_dropout", 0.0) or any(dropout):
        return "dropout in the trunk (its output differs each step)"
    if lengths is not None:
        size = sum(lengths) * config.hidden_size * next(backbone.parameters()).element_size()
        if size > CACHE_BUDGET_BYTES:
            return f"the trunk outputs ({size / 2**30:.1f} GiB) exceed the cache budget"
    return None


class FrozenTrunk:
    """The trunk-output cache of one train stage and the forward that trains from it."""

    def __init__(self, model: Any, trainable_layers: int) -> None:
        self.model = model
        self.backbone = model.base_model
        self.layers = self.backbone.layers
        self.first = max(len(self.layers) - trainable_layers, 0)
        """Index of the lowest trainable layer: the trunk is the embeddings and the layers below."""
        self.cache: dict[bytes, Any] = {}
        self.stats = TrunkStats()
        self.enabled = True
        """False: every call goes to TRL's forward (a comparison on the same model)."""

    # -- the trunk ----------------------------------------------------------------------------

    def _trunk(self, input_ids: Any, attention_mask: Any) -> Any:
        """Hidden states entering the first trainable layer, the backbone's own forward stopped there."""
        import torch

        captured: list[Any] = []

        def grab(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            captured.append(args[0] if args else kwargs["hidden_states"])
            raise _Stop

        handle = self.layers[self.first].register_forward_pre_hook(grab, with_kwargs=True)
        try:
            with torch.no_grad():
                self.backbone(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        except _Stop:
            pass
        finally:
            handle.remove()
        return captured[0]

    def _fill(self, input_ids: Any, lengths: list[int], keys: list[bytes]) -> None:
        """Compute the trunk output of the rows not cached yet, in one batch cut to their longest."""
        import torch

        todo: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in self.cache and key not in todo:
                todo[key] = i
        if not todo:
            return
        t0 = time.perf_counter()
        rows = list(todo.values())
        width = max(lengths[i] for i in rows)
        ids = input_ids[rows, :width]
        mask = (torch.arange(width, device=ids.device) < torch.tensor([lengths[i] for i in rows],
                                                                       device=ids.device)[:, None]).long()
        hidden = self._trunk(ids, mask)
        for j, (key, i) in enumerate(todo.items()):
            self.cache[key] = hidden[j, :lengths[i]].clone()
        self.stats.trunk_rows += len(rows)
        self.stats.trunk_passes += 1
        self.stats.trunk_s += time.perf_counter() - t0

    @contextmanager
    def _trunk_passed_through(self) -> Iterator[None]:
        """The frozen layers return their input (the cached trunk output goes in as inputs_embeds)."""
        saved = [layer.__dict__.get("forward") for layer in self.layers[:self.first]]
        for layer in self.layers[:self.first]:
            layer.forward = _passthrough
        try:
            yield
        finally:
            for layer, old in zip(self.layers[:self.first], saved, strict=True):
                if old is None:
                    del layer.forward
                else:
                    layer.forward = old

    # -- one training forward -----------------------------------------------------------------

    def lengths(self, attention_mask: Any) -> list[int] | None:
        """Real tokens per row when the batch is right-padded (the trunk output of a row then does
        not depend on the batch), else None."""
        import torch

        if attention_mask is None or attention_mask.dim() != 2:
            return None
        n = attention_mask.sum(dim=1)
        prefix = torch.arange(attention_mask.shape[1], device=n.device)[None, :] < n[:, None]
        return n.tolist() if torch.equal(attention_mask.bool(), prefix) else None

    def forward(self, input_ids: Any, attention_mask: Any, labels: Any, lengths: list[int],
                num_items_in_batch: Any = None) -> Any:
        """TRL's FusedCausalLMOutput for a right-padded batch, from the cached trunk outputs."""
        from trl.kernels import ChunkedLogProbFunction
        from trl.trainer import utils as trl_utils

        keys = [input_ids[i, :n].cpu().numpy().tobytes() for i, n in enumerate(lengths)]
        self._fill(input_ids, lengths, keys)
        first = self.cache[keys[0]]
        hidden = first.new_zeros((input_ids.shape[0], input_ids.shape[1], first.shape[-1]))
        for i, (key, n) in enumerate(zip(keys, lengths, strict=True)):
            hidden[i, :n] = self.cache[key]
        if any(getattr(layer, "gradient_checkpointing", False) for layer in self.layers[self.first:]):
            hidden.requires_grad_(True)  # reentrant checkpointing needs an input with grad
        with self._trunk_passed_through():
            out = self.backbone(inputs_embeds=hidden, attention_mask=attention_mask, use_cache=False)
        head = self.model.get_output_embeddings()
        states = out.last_hidden_state[:, :-1].to(head.weight.device)
        targets = labels[:, 1:].to(head.weight.device)
        mask = targets != -100
        per_token = ChunkedLogProbFunction.apply(
            states[mask], head.weight, head.bias, targets[mask], 1.0,
            getattr(trl_utils, "_CHUNKED_LOGPROB_CHUNK_SIZE", 32768), None, 1.0, HEAD_OUTPUTS)
        # masked_scatter keeps an all-masked batch connected to the graph (a zero loss, not a failing backward)
        log_probs, entropy, log_sum_sq_probs, mean_logits, is_top1 = (
            None if x is None else x.new_zeros(mask.shape).masked_scatter(mask, x) for x in per_token)
        loss = -log_probs.sum() / (mask.sum().clamp(min=1) if num_items_in_batch is None else num_items_in_batch)
        self.stats.fast_calls += 1
        return trl_utils.FusedCausalLMOutput(
            loss=loss, log_probs=log_probs, entropy=entropy, log_sum_sq_probs=log_sum_sq_probs,
            mean_logits=mean_logits, is_top1=is_top1, label_mask=mask)

    def serves(self, args: tuple[Any, ...], kwargs: dict[str, Any], fused: bool, labels: Any,
               shift_labels: Any) -> list[int] | None:
        """The rows' lengths when this call is a training forward of a padded batch, else None."""
        import torch

        given = {k for k, v in kwargs.items() if v is not None}  # a peft model passes its unused inputs as None
        if not (self.enabled and fused and self.model.training and torch.is_grad_enabled()) or args or labels is None \
                or shift_labels is not None or not given <= SERVED_KWARGS or kwargs.get("input_ids") is None:
            return None
        return self.lengths(kwargs.get("attention_mask"))


def install(trainer: Any, params: Any) -> FrozenTrunk | None:
    """Put the frozen-trunk forward in front of the model's (TRL's fused) forward when it applies
    (`why_not`); returns it (its `stats` say what it did), or None. Under peft the forward goes in
    front of the base model's, which the peft model calls with TRL's arguments."""
    model = unwrapped(trainer.model)
    lengths = [len(ids) for ids in trainer.train_dataset["input_ids"]]
    if why_not(params, model, packing=bool(getattr(trainer.args, "packing", False)), lengths=lengths) is not None:
        return None
    trunk = FrozenTrunk(model, params.trainable_layers)
    previous = model.forward

    @functools.wraps(type(model).forward)  # keeps the signature the Trainer reads its columns from
    def forward(self: Any, *args: Any, fused_lm_head: bool = False, labels: Any = None, shift_labels: Any = None,
                num_items_in_batch: Any = None, **kwargs: Any) -> Any:
        lengths = trunk.serves(args, kwargs, fused_lm_head, labels, shift_labels)
        if lengths is not None:
            return trunk.forward(kwargs["input_ids"], kwargs["attention_mask"], labels, lengths, num_items_in_batch)
        if fused_lm_head:
            trunk.stats.fallback_calls += 1
        extra = {k: v for k, v in (("labels", labels), ("shift_labels", shift_labels),
                                   ("num_items_in_batch", num_items_in_batch)) if v is not None}
        return previous(*args, fused_lm_head=fused_lm_head, **extra, **kwargs)

    model.forward = types.MethodType(forward, model)
    return trunk
