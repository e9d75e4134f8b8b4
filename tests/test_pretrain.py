"""Teacher-free pretraining (clawloop.bootstrap.pretrain) and the copy probe (clawloop.bootstrap.copy_probe)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from clawloop.bootstrap.copy_probe import items, probe
from clawloop.bootstrap.pretrain import documents
from clawloop.config.bootstrap import PretrainConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tok() -> Any:
    from clawloop.bootstrap.corpus import corpus
    from clawloop.bootstrap.scratch import build_tokenizer, train_tokenizer

    return build_tokenizer(train_tokenizer("split", 1024, 0, corpus(0, n_pairs=800, n_chats=100)))


def test_documents_are_deterministic_per_seed(tok: Any) -> None:
    a = list(documents(PretrainConfig(seed=1), tok, 40))
    b = list(documents(PretrainConfig(seed=1), tok, 40))
    c = list(documents(PretrainConfig(seed=2), tok, 40))
    assert a == b != c
    kinds = "".join(a)
    assert "<tool_call>" in kinds and "$ ls" in kinds  # chat/task and shell documents both appear


def test_mix_rejects_unknown_kinds() -> None:
    with pytest.raises(ValueError):
        next(documents(PretrainConfig(mix={"novel": 1.0})))


def _shingles(text: str, n: int = 8) -> set[str]:
    words = re.findall(r"\w+", text.lower())
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def test_no_heldout_leakage() -> None:
    """No 8-word run of a shell-core instruction, and no held-out probe name, in the stream."""
    held: set[str] = set()
    for f in (ROOT / "benchmarks" / "shell-core").glob("*/instruction.md"):
        held |= _shingles(f.read_text(encoding="utf-8"))
    assert len(held) > 500
    text = "\n".join(documents(PretrainConfig(seed=0), None, 1500))
    assert not (_shingles(text) & held)
    stems = {n.split(".")[0] for it in items(100) for n in it.names}
    assert not [s for s in stems if len(s) >= 6 and s in text]


def test_probe_items_are_deterministic_and_name_the_copied_spans() -> None:
    a, b = items(30, seed=0), items(30, seed=0)
    assert a == b and items(30, seed=1) != a
    for it in a:
        assert it.target.startswith("<tool_call>") and it.target.endswith("<|im_end|>")
        assert it.names and all(n in it.target and n in it.messages[-1]["content"] for n in it.names)


class _Oracle:
    """A 'model' that always predicts the next token of its input (perfect copying)."""

    def __init__(self, vocab: int) -> None:
        self.vocab = vocab

    def __call__(self, input_ids: Any, attention_mask: Any = None) -> Any:
        import torch

        nxt = torch.roll(input_ids, -1, dims=1)
        logits = torch.nn.functional.one_hot(nxt, self.vocab).float()
        return type("Out", (), {"logits": logits})()


def test_copy_probe_scores_an_oracle_perfect_and_a_random_model_near_zero(tok: Any) -> None:
    from clawloop.bootstrap.scratch import build_model

    perfect = probe(_Oracle(len(tok)), tok, n=12)
    assert perfect == {"name_exact": 1.0, "command_exact": 1.0, "call_token_acc": 1.0, "induction_acc": 1.0}
    model = build_model("tiny", tok, 0).eval()
    rand = probe(model, tok, n=12)
    assert set(rand) == set(perfect) and all(0.0 <= v < 0.1 for v in rand.values())


def test_bootstrap_with_a_small_pretrain_budget(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from clawloop.bootstrap.scratch import bootstrap

    pre = {"steps": 3, "batch_size": 2, "seq_len": 64, "probe_items": 4, "learning_rate": 1e-3}
    meta = bootstrap(tmp_path / "p", size="tiny", seed=0, vocab_size=1024, corpus_pairs=800, pretrain=pre)
    base = bootstrap(tmp_path / "b", size="tiny", seed=0, vocab_size=1024, corpus_pairs=800)
    rec = meta["pretrain"]
    assert rec["config"]["steps"] == 3 and rec["tokens"] == 3 * 2 * 64
    assert [p["step"] for p in rec["curve"]] == [0, 3] and rec["curve"][-1]["loss"] > 0
    assert base["pretrain"] is None and meta["digest"] != base["digest"]
    on_disk = json.loads((tmp_path / "p" / "model_meta.json").read_text())
    assert on_disk["pretrain"]["config"]["steps"] == 3
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "p")
    tk = AutoTokenizer.from_pretrained(tmp_path / "p")
    out = model.generate(**tk("<|im_start|>user\nhi<|im_end|>\n", return_tensors="pt"), max_new_tokens=3)
    assert out.shape[1] >= 1


def test_rows_hold_whole_documents_never_split(tok: Any) -> None:
    # a name and its copy must share a context: a row is whole documents, then masked padding
    from itertools import islice

    from clawloop.bootstrap.pretrain import blocks

    config = PretrainConfig(seed=3, seq_len=256, mix={"echo": 1.0, "repeat": 1.0, "chat": 1.0})
    sep = tok.convert_tokens_to_ids("<|endoftext|>")
    docs = [tok(d, add_special_tokens=False)["input_ids"] + [sep] for d in documents(config, tok, 400)]
    pos = 0
    for ids, labels in islice(blocks(config, tok), 30):
        assert len(ids) == len(labels) == 256
        body = [t for t in labels if t != -100]
        assert labels[len(body):] == [-100] * (256 - len(body))  # padding only at the end, masked
        assert ids[: len(body)] == body and ids[len(body):] == [0] * (256 - len(body))
        while body:  # the row is exactly the next documents of the stream, each whole (or cut at 256)
            doc = docs[pos][:256]
            assert body[: len(doc)] == doc
            body, pos = body[len(doc):], pos + 1


def test_echo_documents_repeat_their_line_verbatim(tok: Any) -> None:
    for doc in documents(PretrainConfig(seed=4, mix={"echo": 1.0}), tok, 30):
        splits = [doc.split(f"\n{m}\n", 1) for m in ("again:", ">", "$ echo", "#") if f"\n{m}\n" in doc]
        assert any(len(p) == 2 and p[0] == p[1] and len(p[0]) > 5 for p in splits), doc


def test_induction_rows_mask_the_first_copy_and_label_the_repeat() -> None:
    import random

    from clawloop.bootstrap.pretrain import induction_row

    ids, labels = induction_row(random.Random(0), 200, (256, 1000))
    assert len(ids) == len(labels) == 200
    assert all(256 <= t < 1000 for t in ids)
    # every labelled position is the token at that position, and is a repeat of an earlier span
    assert all(lab in (-100, t) for lab, t in zip(labels, ids, strict=True))
    assert 0.3 < sum(lab != -100 for lab in labels) / 200 <= 0.6
    first = labels.index(next(lab for lab in labels if lab != -100))
    span = ids[:first]
    assert ids[first:2 * first] == span[: len(ids[first:2 * first])]
