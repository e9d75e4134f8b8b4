"""Build the embedded policy from scratch, offline: a tokenizer, a chat template, a random Qwen3.

`bootstrap(out, size="tiny", seed=0)` writes a directory that `AutoTokenizer` /
`AutoModelForCausalLM` (and so `HFPolicy`, `VLLMPolicy` and TRL) load like any hub checkpoint,
plus `model_meta.json`. Same seed, same bytes.

Tokenizer ("split" scheme, chosen by measurement, see `measure_tokenizer`): BPE over byte-level
symbols (every byte is in the alphabet, so nothing is ever unknown), but merges never cross a
letter run, a single digit, a single punctuation character or a whitespace run. A file name is
then the same token sequence wherever it appears (after a space, a quote, a slash, inside JSON),
so copying a name from the instruction into the command is a token-for-token copy. Byte-level
BPE in the GPT-2 style compresses better (3.7 vs 2.4 characters per token) but gives the same
word different tokens by context (`Ġreport` vs `report`), and its copies match 92% of the time.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from clawloop.bootstrap.corpus import corpus, pair, tool_call
from clawloop.bootstrap.pretrain import pretrain
from clawloop.config.bootstrap import SIZES, BootstrapConfig
from clawloop.core.agent.tool_calls import response_template
from clawloop.core.io import write_json
from clawloop.errors import ClawloopError

TEMPLATE = Path(__file__).parent / "templates" / "chat_template.jinja"

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Control tokens (special: dropped by decode(skip_special_tokens=True))."""
ADDED_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")
"""Markup tokens of the chat format, single tokens but not special (as in Qwen3)."""

SPLIT_PATTERN = r"\p{L}+|\p{N}|\s+|[^\p{L}\p{N}\s]"
"""Pre-tokenizer of the "split" scheme: letter runs, single digits, whitespace runs, single marks."""

def train_tokenizer(scheme: str = "split", vocab_size: int = 2048, seed: int = 0,
                    texts: Iterable[str] | None = None) -> Any:
    """Train a `tokenizers.Tokenizer` on the offline corpus (or `texts`)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    if scheme == "split":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    elif scheme == "bytelevel":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        raise ClawloopError(f"unknown tokenizer scheme {scheme!r} (split | bytelevel)")
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(ADDED_TOKENS), min_frequency=2, special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts if texts is not None else corpus(seed), trainer)
    tok.add_tokens(list(ADDED_TOKENS))
    return tok


def _span_ids(ids: list[int], offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, ...]:
    return tuple(i for i, (a, b) in zip(ids, offsets, strict=True) if b > start and a < end)


def measure_tokenizer(tok: Any, n: int = 1000, seed: int = 12345) -> dict[str, float]:
    """How well a tokenizer suits copying names: held-out pairs (unseen names and seeds).

    copy_consistent: share of names whose tokens in the instruction equal their tokens in the
    rendered tool call; chars_per_token: compression over instructions and calls;
    tokens_per_name: mean tokens of a name.
    """
    rng = random.Random(seed)
    same = total = ntok = nchar = name_toks = 0
    for _ in range(n):
        p = pair(rng)
        call = tool_call(p.command)
        ei, ec = tok.encode(p.instruction), tok.encode(call)
        ntok += len(ei.ids) + len(ec.ids)
        nchar += len(p.instruction) + len(call)
        for name in p.names:
            a, b = p.instruction.find(name), call.find(name)
            if a < 0 or b < 0:
                continue
            si = _span_ids(ei.ids, ei.offsets, a, a + len(name))
            sc = _span_ids(ec.ids, ec.offsets, b, b + len(name))
            total += 1
            same += si == sc
            name_toks += len(si)
    return {"copy_consistent": round(same / max(total, 1), 4),
            "chars_per_token": round(nchar / max(ntok, 1), 3),
            "tokens_per_name": round(name_toks / max(total, 1), 2)}


def chat_template() -> str:
    """The Qwen3-style chat template with generation markers."""
    return TEMPLATE.read_text(encoding="utf-8")


def build_tokenizer(raw: Any, max_length: int = 8192) -> Any:
    """Wrap a trained `tokenizers.Tokenizer` as a transformers tokenizer with the chat template."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"], model_max_length=max_length,
        clean_up_tokenization_spaces=False, padding_side="left")
    tok.chat_template = chat_template()
    tok.response_template = response_template()
    return tok


def build_model(size: str, tokenizer: Any, seed: int, max_positions: int = 8192) -> Any:
    """A Qwen3ForCausalLM with random weights (seeded), head_dim = hidden / heads."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    arch = SIZES[size]
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen3Config(
        vocab_size=len(tokenizer), head_dim=arch["hidden_size"] // arch["num_attention_heads"],
        max_position_embeddings=max_positions, tie_word_embeddings=True, rope_theta=10000.0,
        bos_token_id=None, eos_token_id=eos, pad_token_id=pad, use_cache=True, **arch)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=[eos, pad], pad_token_id=pad, bos_token_id=None)
    return model


def dir_digest(path: Path) -> str:
    """Content digest of a model directory (model_meta.json excluded): same bytes, same digest."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and p.name != "model_meta.json"):
        h.update(f.relative_to(path).as_posix().encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def bootstrap(out: str | Path, config: BootstrapConfig | None = None, log: Any = None,
              **overrides: Any) -> dict[str, Any]:
    """Build tokenizer + model into `out`, pretrain it when `config.pretrain.steps` > 0;
    returns (and writes) model_meta.json. `log(point)` sees each point of the pretraining curve."""
    config = BootstrapConfig.model_validate({**(config or BootstrapConfig()).model_dump(), **overrides})
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    raw = train_tokenizer(config.tokenizer_scheme, config.vocab_size, config.seed,
                          corpus(config.seed, n_pairs=config.corpus_pairs, n_chats=config.corpus_pairs // 5))
    metrics = measure_tokenizer(raw)
    tok = build_tokenizer(raw, config.max_position_embeddings)
    model = build_model(config.size, tok, config.seed, config.max_position_embeddings)
    pretrained = pretrain(model, tok, config.pretrain, log=log) if config.pretrain.steps else None
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tok.save_pretrained(out)
    model.save_pretrained(out)
    params = sum(p.numel() for p in model.parameters())
    meta = {
        "size": config.size, "params": params, "seed": config.seed, "architecture": "Qwen3ForCausalLM",
        **{k: v for k, v in SIZES[config.size].items()}, "vocab_size": len(tok),
        "tokenizer": {"scheme": config.tokenizer_scheme, "vocab_size": len(tok),
                      "pre_tokenizer": SPLIT_PATTERN if config.tokenizer_scheme == "split" else "gpt2",
                      **metrics},
        "max_position_embeddings": config.max_position_embeddings,
        "chat_template": "qwen3-style, tools in system, <tool_call> JSON, generation markers",
        "pretrain": pretrained,
        "config": config.model_dump(), "digest": dir_digest(out),
    }
    write_json(out / "model_meta.json", meta)
    return meta
