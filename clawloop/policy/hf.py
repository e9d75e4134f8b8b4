"""The transformers backend: chat template and tokenizer around the decode engine
(clawloop.policy.engine), which computes the replies on token ids.

Its own module because it is the one backend whose generation runs in this process (torch and
transformers are imported inside the class); `clawloop.policy.load` builds it from a spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clawloop.config.engine import EngineConfig, refuse_flat_engine_keys
from clawloop.errors import ClawloopError
from clawloop.policy.number_format import NumberFormat, auto_format
from clawloop.policy.types import Conversation, Generation, SamplingParams, cut_at_stop

ENGINE_KEYS = ("forward", "decode", "speculate", "speculate_tokens", "quantize", "kv_reuse_entries",
               "max_batch_size", "threads")
"""The engine's knobs, once keys of HFPolicyConfig itself (now under `engine`)."""


class HFPolicyConfig(BaseModel):
    """Options of the transformers backend."""

    model_config = ConfigDict(extra="forbid")

    device: str = "auto"
    """"auto" (cuda when available, else cpu), "cpu", "cuda", "cuda:1", ..."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """Weights dtype, the format replies are computed in; "auto": bfloat16 on GPU; on CPU bfloat16
    where it has native bf16 matmuls (avx512_bf16 / amx_bf16) and a short probe measures them
    >= 1.5x float32's, else float32 (clawloop.policy.number_format.choose_dtype)."""
    max_context_tokens: int | None = None
    """Prompt + reply limit; None reads max_position_embeddings from the model config."""
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Extra variables for the chat template, e.g. {"enable_thinking": false} for Qwen3."""
    engine: EngineConfig = Field(default_factory=EngineConfig)
    """How replies are computed: forward pass, decode loop, guesses, int8, KV reuse, batch size,
    threads (clawloop.config.engine.EngineConfig)."""

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return refuse_flat_engine_keys(data, ENGINE_KEYS, "engine")


class HFPolicy:
    """A transformers causal LM behind its chat template: conversations in, replies out, computed
    by a clawloop.policy.engine Engine on token ids."""

    def __init__(self, model_dir: str | Path, config: HFPolicyConfig | None = None, *,
                 policy_id: str | None = None, model: Any = None, tokenizer: Any = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        from clawloop.policy.engine.engine import Engine  # imports torch

        hf_logging.disable_progress_bar()
        self.config = config or HFPolicyConfig()
        self.model_dir = Path(model_dir)
        self.policy_id = policy_id or self.model_dir.name
        dev = self.config.device
        if dev == "auto":
            dev = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(dev)
        try:
            self.tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(model_dir))
            self.number_format = (NumberFormat(str(model.dtype).removeprefix("torch."), "model") if model is not None
                                  else self._number_format(model_dir))
            # safetensors only: a pickled pytorch_model.bin beside them is never unpickled
            self.model = model or AutoModelForCausalLM.from_pretrained(
                str(model_dir), dtype=getattr(torch, self.number_format.dtype), use_safetensors=True)
        except OSError as e:
            raise ClawloopError(f"{model_dir}: cannot load model ({e})") from None
        self.model.to(self.device).eval()
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.max_context = self.config.max_context_tokens or int(
            getattr(self.model.config, "max_position_embeddings", 32768))
        try:
            self.engine = Engine(self.model, self.tokenizer, self.config.engine, max_context=self.max_context,
                                 owns_model=model is None)
        except ClawloopError as e:
            raise ClawloopError(f"{model_dir}: {e}") from None

    def _number_format(self, model_dir: str | Path) -> NumberFormat:
        """HFPolicyConfig.dtype, or for "auto" the format number_format.auto_format picks for this
        model's MLP shape on this device (read from its config.json before the weights load)."""
        if self.config.dtype != "auto":
            return NumberFormat(self.config.dtype, "set")
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(str(model_dir))
        hidden = getattr(cfg, "hidden_size", None) or 1024
        return auto_format(self.device.type, hidden, getattr(cfg, "intermediate_size", None) or 4 * hidden,
                           self.config.engine.threads)

    def render(self, conversation: Conversation, tools: list[dict[str, Any]] | None) -> str:
        """The prompt text of one conversation, ending with the assistant header."""
        return self.tokenizer.apply_chat_template(
            conversation, tools=tools, tokenize=False, add_generation_prompt=True,
            **self.config.chat_template_kwargs)

    def generate(self, conversations: Sequence[Conversation], sampling: SamplingParams,
                 *, tools: list[dict[str, Any]] | None = None) -> list[Generation]:
        prompts = [self.tokenizer(self.render(c, tools), add_special_tokens=False)["input_ids"]
                   for c in conversations]
        out: list[Generation | None] = [None] * len(prompts)
        todo = []
        for i, ids in enumerate(prompts):
            if len(ids) + 1 > self.max_context:
                out[i] = Generation("", len(ids), 0, "context", tuple(ids), ())
            else:
                todo.append(i)
        replies = self.engine.generate([prompts[i] for i in todo], sampling, tools)
        for i, new in zip(todo, replies, strict=True):
            out[i] = self._reply(prompts[i], new, sampling)
        return [g for g in out if g is not None]

    def _reply(self, prompt: list[int], new: list[int], sampling: SamplingParams) -> Generation:
        """The Generation of tokens `new` (ending with a stop token when the reply ended)."""
        ended = bool(new) and new[-1] in self.engine.stop_ids
        text = self.tokenizer.decode(new[:-1] if ended else new, skip_special_tokens=False)
        reason = "stop" if ended else "length"
        if sampling.stop:
            text, hit = cut_at_stop(text, sampling.stop)
            reason = "stop" if hit else reason
        return Generation(text, len(prompt), len(new), reason, tuple(prompt), tuple(new))
