"""Write a transformers checkpoint as a GGUF file that llama.cpp serves, for rollouts only.

Training stays on the HF checkpoint; after each training step the rollout backend
(`rollout.backend: llamacpp`) converts the new checkpoint once (a few seconds for 135M
parameters) and caches the file by the checkpoint's content hash.

Two architectures are supported, the two the loop trains: `LlamaForCausalLM` (the SmolLM2
base) and `Qwen3ForCausalLM` (the scratch bases). The tokenizer goes in as llama.cpp's "gpt2"
byte-level BPE; rollouts send and receive token ids, so llama.cpp never tokenizes text and the
HF tokenizer stays the only one that does.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from clawloop.errors import ClawloopError

GGUFType = Literal["q4_0", "q5_0", "q8_0", "f16", "f32"]
ARCHITECTURES = {"LlamaForCausalLM": "LLAMA", "Qwen3ForCausalLM": "QWEN3"}
EXPORT_VERSION = 1
"""Bumped when the exporter's output changes, so cached files of an older exporter are rebuilt."""


def checkpoint_digest(model_dir: str | Path) -> str:
    """sha256 over the files that define the weights and vocabulary (not the chat template)."""
    d = Path(model_dir)
    h = hashlib.sha256(f"gguf-export-v{EXPORT_VERSION}".encode())
    names = sorted(p.name for p in d.glob("*.safetensors")) + ["config.json", "tokenizer.json"]
    for name in names:
        path = d / name
        if not path.is_file():
            raise ClawloopError(f"{d}: {name} is missing (not an HF checkpoint directory)")
        h.update(name.encode())
        with path.open("rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
    return h.hexdigest()


def _permute(w: Any, n_head: int) -> Any:
    """HF's rotary layout (halves) → llama.cpp's llama layout (interleaved pairs), as
    llama.cpp's own convert_hf_to_gguf.py does for Llama q/k projections."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def _load_weights(d: Path) -> dict[str, Any]:
    import numpy as np
    from safetensors import safe_open

    weights: dict[str, Any] = {}
    for path in sorted(d.glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():  # noqa: SIM118 (safe_open has no __iter__)
                weights[name] = f.get_tensor(name).float().numpy().astype(np.float32, copy=False)
    if not weights:
        raise ClawloopError(f"{d}: no *.safetensors weights")
    return weights


def _vocab(d: Path, vocab_size: int) -> tuple[list[str], list[int], list[str], dict[str, int]]:
    """(tokens, token types, merges, special ids) from tokenizer.json (byte-level BPE)."""
    import gguf

    path = d / "tokenizer.json"
    try:
        tj = json.loads(path.read_text())
        model = tj["model"]
        if model.get("type") != "BPE":
            raise ClawloopError(f"{path}: model.type {model.get('type')!r}: only byte-level BPE exports")
        vocab: dict[str, int] = dict(model["vocab"])
        added = tj.get("added_tokens", [])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ClawloopError(f"{path}: cannot read the tokenizer ({e})") from None
    special = {}
    for t in added:
        vocab[t["content"]] = t["id"]
    n = max(vocab_size, max(vocab.values()) + 1)
    tokens = [f"[PAD{i}]" for i in range(n)]
    types = [gguf.TokenType.UNUSED] * n
    for text, i in vocab.items():
        tokens[i], types[i] = text, gguf.TokenType.NORMAL
    for t in added:
        types[t["id"]] = gguf.TokenType.CONTROL if t.get("special") else gguf.TokenType.USER_DEFINED
        special[t["content"]] = t["id"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return tokens, [int(t) for t in types], merges, special


def export_gguf(model_dir: str | Path, out: str | Path, *, qtype: GGUFType = "q8_0") -> dict[str, Any]:
    """Write checkpoint `model_dir` as GGUF file `out` (atomically); returns what was written."""
    import gguf

    start = time.perf_counter()
    d, out = Path(model_dir), Path(out)
    try:
        config = json.loads((d / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise ClawloopError(f"{d / 'config.json'}: cannot read ({e})") from None
    export = _Export.of(d, config, qtype)
    vocab = _vocab(d, int(config["vocab_size"]))

    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    out.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(tmp), gguf.MODEL_ARCH_NAMES[export.arch])
    export.add_metadata(w, *vocab)
    tensors = export.add_tensors(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out)
    return {"path": str(out), "qtype": qtype, "bytes": out.stat().st_size, "tensors": tensors,
            "architecture": export.arch_name.lower(), "seconds": round(time.perf_counter() - start, 2)}


@dataclass
class _Export:
    """One checkpoint's GGUF export: its config, architecture and shape, and the weights' type."""

    d: Path
    config: dict[str, Any]
    qtype: GGUFType
    arch_name: str
    arch: Any
    n_layer: int
    n_head: int
    n_kv: int
    hidden: int
    head_dim: int
    theta: float

    @classmethod
    def of(cls, d: Path, config: dict[str, Any], qtype: GGUFType) -> _Export:
        import gguf

        archs = config.get("architectures") or []
        arch_name = next((ARCHITECTURES[a] for a in archs if a in ARCHITECTURES), None)
        if arch_name is None:
            raise ClawloopError(f"{d / 'config.json'}: architectures {archs}: the llamacpp backend exports "
                                f"only {', '.join(ARCHITECTURES)}; use rollout.backend hf for this model")
        n_layer, n_head = int(config["num_hidden_layers"]), int(config["num_attention_heads"])
        n_kv = int(config.get("num_key_value_heads") or n_head)
        hidden = int(config["hidden_size"])
        head_dim = int(config.get("head_dim") or hidden // n_head)
        rope = config.get("rope_parameters") or {}
        theta = float(rope.get("rope_theta", config.get("rope_theta", 10000.0)))
        if rope.get("rope_type", "default") != "default":
            raise ClawloopError(f"{d / 'config.json'}: rope_type {rope['rope_type']!r} is not exported")
        return cls(d, config, qtype, arch_name, getattr(gguf.MODEL_ARCH, arch_name), n_layer, n_head, n_kv,
                   hidden, head_dim, theta)

    def add_metadata(self, w: Any, tokens: list[str], types: list[int], merges: list[str],
                     special: dict[str, int]) -> None:
        """The model's shape, file type and tokenizer as GGUF key/values."""
        import gguf

        config = self.config
        w.add_name(self.d.name)
        w.add_context_length(int(config.get("max_position_embeddings", 8192)))
        w.add_embedding_length(self.hidden)
        w.add_block_count(self.n_layer)
        w.add_feed_forward_length(int(config["intermediate_size"]))
        w.add_head_count(self.n_head)
        w.add_head_count_kv(self.n_kv)
        w.add_key_length(self.head_dim)
        w.add_value_length(self.head_dim)
        w.add_rope_dimension_count(self.head_dim)
        w.add_rope_freq_base(self.theta)
        w.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
        w.add_vocab_size(len(tokens))
        w.add_file_type({"q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "q5_0": gguf.LlamaFileType.MOSTLY_Q5_0,
                         "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0, "f16": gguf.LlamaFileType.MOSTLY_F16,
                         "f32": gguf.LlamaFileType.ALL_F32}[self.qtype])
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        eos = special.get("<|im_end|>", config.get("eos_token_id"))
        if isinstance(eos, list):
            eos = eos[0]
        if eos is None:
            raise ClawloopError(f"{self.d}: no end-of-turn token (<|im_end|>) and no eos_token_id in config.json")
        w.add_eos_token_id(int(eos))
        if "<|endoftext|>" in special:
            w.add_pad_token_id(special["<|endoftext|>"])
        if config.get("bos_token_id") is not None:
            w.add_bos_token_id(int(config["bos_token_id"]))
        w.add_add_bos_token(False)

    def add_tensors(self, w: Any) -> int:
        """The checkpoint's weights under their GGUF names, in the export's type; how many."""
        import gguf
        import numpy as np

        names = gguf.get_tensor_name_map(self.arch, self.n_layer)
        tied = bool(self.config.get("tie_word_embeddings", False))
        q_type = getattr(gguf.GGMLQuantizationType, self.qtype.upper())
        weights = _load_weights(self.d)
        for name, arr in weights.items():
            if name == "lm_head.weight" and tied:
                continue
            new = names.get_name(name, try_suffixes=(".weight", ".bias"))
            if new is None:
                raise ClawloopError(f"{self.d}: tensor {name} has no GGUF name for {self.arch_name.lower()}")
            if self.arch_name == "LLAMA" and name.endswith("q_proj.weight"):
                arr = _permute(arr, self.n_head)
            elif self.arch_name == "LLAMA" and name.endswith("k_proj.weight"):
                arr = _permute(arr, self.n_kv)
            if arr.ndim == 1 or q_type == gguf.GGMLQuantizationType.F32:
                w.add_tensor(new, np.ascontiguousarray(arr, dtype=np.float32))
            elif q_type == gguf.GGMLQuantizationType.F16 or arr.shape[-1] % 32:
                w.add_tensor(new, arr.astype(np.float16))
            else:
                # The token embedding is also the (tied) output head: 4/5-bit types keep it at q8_0,
                # as llama.cpp's own quantizer keeps the output tensor at higher precision.
                t = q_type
                if new == "token_embd.weight" and q_type in (gguf.GGMLQuantizationType.Q4_0,
                                                            gguf.GGMLQuantizationType.Q5_0):
                    t = gguf.GGMLQuantizationType.Q8_0
                w.add_tensor(new, gguf.quants.quantize(arr, t), raw_dtype=t)
        return len(weights)


def cache_dir() -> Path:
    """Where converted checkpoints are kept ($CLAWLOOP_CACHE or ~/.cache/clawloop, /gguf)."""
    root = os.environ.get("CLAWLOOP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "clawloop")
    return Path(root) / "gguf"


def cached_gguf(model_dir: str | Path, *, qtype: GGUFType = "q8_0", keep: int = 8) -> Path:
    """The GGUF of checkpoint `model_dir`, converted on first use; the `keep` newest files stay."""
    digest = checkpoint_digest(model_dir)
    root = cache_dir()
    path = root / f"{digest[:24]}-{qtype}.gguf"
    if path.is_file():
        path.touch()
        return path
    export_gguf(model_dir, path, qtype=qtype)
    files = sorted(root.glob("*.gguf"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[keep:]:
        old.unlink(missing_ok=True)
    return path
