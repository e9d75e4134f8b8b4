"""VLLMPolicy: vLLM's offline engine on the local GPUs (imported only when used).

Prompts are rendered and tokenized with the model's own HF tokenizer exactly as HFPolicy does,
then handed to `LLM.generate` as token ids; an optional LoRA adapter applies to every request.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clawloop.errors import ClawloopError
from clawloop.models.policy_types import (
    END_OF_TURN,
    Conversation,
    Generation,
    SamplingParams,
    VLLMPolicyConfig,
    cut_at_stop,
)


class VLLMPolicy:
    """vLLM's offline `LLM` engine. Prompts are rendered with the model's own HF chat template."""

    def __init__(self, model_dir: str | Path, config: VLLMPolicyConfig | None = None, *,
                 policy_id: str | None = None) -> None:
        try:
            from vllm import LLM
        except ImportError:
            raise ClawloopError("the vllm backend needs `pip install clawloop[gpu]`") from None
        self.config = c = config or VLLMPolicyConfig()
        self.model_dir = str(model_dir)
        self.policy_id = policy_id or Path(model_dir).name
        kwargs: dict[str, Any] = {
            "model": self.model_dir, "tensor_parallel_size": c.tensor_parallel_size,
            "gpu_memory_utilization": c.gpu_memory_utilization, "dtype": c.dtype,
            "enable_prefix_caching": c.enable_prefix_caching, "seed": c.seed,
        }
        if c.max_model_len:
            kwargs["max_model_len"] = c.max_model_len
        if c.lora_path:
            kwargs.update(enable_lora=True, max_lora_rank=c.max_lora_rank)
        from transformers import AutoTokenizer

        self.llm = LLM(**kwargs)
        # Prompts are rendered and tokenized here, exactly as HFPolicy does.
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
        self.max_context = c.max_model_len or _engine_max_len(self.llm) or int(self.tokenizer.model_max_length)
        self._calls = itertools.count()

    def generate(self, conversations: Sequence[Conversation], sampling: SamplingParams,
                 *, tools: list[dict[str, Any]] | None = None) -> list[Generation]:
        from vllm import SamplingParams as VSampling

        texts = [self.tokenizer.apply_chat_template(c, tools=tools, tokenize=False, add_generation_prompt=True,
                                                    **self.config.chat_template_kwargs) for c in conversations]
        prompts = [list(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        lora = None
        if self.config.lora_path:
            from vllm.lora.request import LoRARequest

            lora = LoRARequest("adapter", 1, self.config.lora_path)
        out: list[Generation | None] = [None] * len(prompts)
        todo = [i for i, p in enumerate(prompts) if len(p) + 1 <= self.max_context]
        for i, p in enumerate(prompts):
            if i not in todo:
                out[i] = Generation("", len(p), 0, "context", tuple(p), ())
        if todo:
            seed = None if sampling.seed is None else sampling.seed * 1_000_003 + next(self._calls)
            params = [VSampling(
                temperature=sampling.temperature, top_p=sampling.top_p, seed=None if seed is None
                else seed + i, max_tokens=min(sampling.max_new_tokens, self.max_context - len(prompts[i])),
                stop=[END_OF_TURN, *sampling.stop], skip_special_tokens=False) for i in todo]
            results = self.llm.generate([{"prompt_token_ids": prompts[i]} for i in todo], params,
                                        use_tqdm=False, lora_request=lora)
            for i, r in zip(todo, results, strict=True):
                o = r.outputs[0]
                text, _ = cut_at_stop(o.text, [END_OF_TURN, self.tokenizer.eos_token or END_OF_TURN])
                reason = "length" if o.finish_reason == "length" else "stop"
                out[i] = Generation(text, len(prompts[i]), len(o.token_ids), reason,
                                    tuple(prompts[i]), tuple(o.token_ids))
        return [g for g in out if g is not None]


def _engine_max_len(llm: Any) -> int | None:
    """The context length vLLM settled on (its engine's model config), where it can be read."""
    for path in (("llm_engine", "model_config"), ("llm_engine", "vllm_config", "model_config"), ("model_config",)):
        obj = llm
        for name in path:
            obj = getattr(obj, name, None)
        if obj is not None and getattr(obj, "max_model_len", None):
            return int(obj.max_model_len)
    return None
