"""EngineConfig: how the decode engine computes replies (params.yaml `rollout.engine`, a PolicySpec's
`hf.engine`). None of it changes what a greedy reply is, except `quantize`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass


@dataclass(config=ConfigDict(extra="forbid"))
class EngineConfig:
    """The decode engine's knobs (clawloop.policy.engine.engine.Engine)."""

    forward: Literal["hf", "fast", "auto"] = "hf"
    """Forward pass of the decode loop: hf, transformers' own (any model, the reference); fast,
    clawloop.policy.engine.fast_forward (CPU, Llama, Qwen2 and Qwen3 decoders: fused projections,
    attention over the filled cache only); auto, fast where it can run, else hf."""
    decode: Literal["loop", "generate"] = "loop"
    """loop: clawloop.policy.engine.decode_loop, finished rows leave the batch; generate: transformers'
    generate, which decodes every row until the longest reply ends (the reference)."""
    speculate: Annotated[int, Field(ge=0)] = 0
    """Most guessed tokens checked per row and decode step (clawloop.policy.engine.drafter: prompt
    lookup, earlier replies and the chat template's tool-call text); replies stay the model's own. 0:
    off."""
    speculate_tokens: Annotated[int, Field(ge=2)] | None = None
    """Most tokens one decode step feeds, guesses included: each of R rows gets min(speculate,
    speculate_tokens // R - 1) guesses, none while R > speculate_tokens / 2 (a wide step has no spare
    compute). None: 24 with fp32 weights, 72 with int8 (benchmarks/perf/README.md)."""
    quantize: Literal["none", "int8"] = "none"
    """int8: Linear layers as int8 x int8 products with per-channel weight and per-token activation
    scales (clawloop.policy.engine.int8_linear), CPU only, rollouts only: the checkpoint and training
    stay fp32."""
    kv_reuse_entries: Annotated[int, Field(ge=0)] | None = None
    """Prompts whose KV cache is kept for the next turn (clawloop.policy.engine.prefix_cache); 0 turns
    reuse off; None: 128 on CPU, off on GPU (use vLLM's prefix caching there)."""
    max_batch_size: Annotated[int, Field(gt=0)] = 64
    """Most prompts in one forward batch (larger batches are split)."""
    threads: Annotated[int, Field(ge=1)] | None = None
    """CPU threads for generation (torch; in params.yaml llama.cpp's too); None: half the cores on CPU
    (sandbox setup and verification run beside generation, and oversubscribed OpenMP threads wait on
    preempted peers), torch's default on GPU."""


def refuse_flat_engine_keys(data: Any, keys: tuple[str, ...], section: str) -> Any:
    """A `mode="before"` validator body for a config that once held the engine's knobs itself:
    each old key fails naming where it went (`section`, e.g. "rollout.engine"), so an old
    params file is not read with its knobs silently dropped."""
    if isinstance(data, dict):
        for key in keys:
            if key in data:
                raise ValueError(f"{key}: moved to {section}.{key}")
        if "engine" in data and not isinstance(data["engine"], dict | EngineConfig):
            raise ValueError(f"engine: now the section of the engine's knobs; the forward pass moved to "
                             f"{section}.forward")
    return data
