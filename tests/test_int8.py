"""Int8 rollouts (clawloop.policy.engine.int8_linear): per-token activation scales, and what they buy over
torch.ao's per-tensor dynamic quantization, which broke the 135M policy's tool calls."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from clawloop.config.engine import EngineConfig
from clawloop.errors import ClawloopError
from clawloop.policy.engine.int8_linear import Int8Linear, quantize_linears
from clawloop.policy.hf import HFPolicy, HFPolicyConfig
from clawloop.policy.types import SamplingParams


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).norm() / b.norm()).item()


def test_int8_linear_is_close_to_fp32_row_by_row() -> None:
    torch.manual_seed(0)
    lin = torch.nn.Linear(96, 64, bias=True)
    x = torch.randn(2, 5, 96)
    q = Int8Linear(lin)
    with torch.no_grad():
        want, got = lin(x), q(x)
    assert got.shape == want.shape == (2, 5, 64) and got.dtype == torch.float32
    assert _rel(got, want) < 0.02
    assert q.weight_t.dtype == torch.int8 and not q.state_dict()  # nothing of it is ever saved


def test_a_loud_token_does_not_flatten_the_quiet_ones() -> None:
    """One row 1000x larger than the rest: per-token scales keep the quiet rows exact to ~1%;
    one scale for the whole tensor (torch.ao's dynamic int8) rounds them to nothing."""
    torch.manual_seed(1)
    lin = torch.nn.Linear(64, 32, bias=False)
    x = torch.randn(8, 64)
    x[0] *= 1000
    with torch.no_grad():
        want = lin(x)
        got = Int8Linear(lin)(x)
        per_tensor = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear},
                                                            dtype=torch.qint8)(x)
    assert _rel(got[1:], want[1:]) < 0.02
    assert _rel(per_tensor[1:], want[1:]) > 0.2


def _tiny_llama(tmp_path: Any) -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(["<pad>", "<|im_end|>", *"abcdefghijklmnopqrstuvwxyz "])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<|im_end|>")
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                      max_position_embeddings=256, eos_token_id=1, pad_token_id=0, initializer_range=0.3)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    return tmp_path


def test_int8_policy_quantizes_its_own_copy_and_keeps_the_checkpoint(tmp_path: Any) -> None:
    d = _tiny_llama(tmp_path)
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    ref = HFPolicy(d, HFPolicyConfig(engine=EngineConfig(threads=1)))
    q = HFPolicy(d, HFPolicyConfig(engine=EngineConfig(threads=1, quantize="int8")))
    linears = [m for m in q.model.modules() if isinstance(m, torch.nn.Linear)]
    assert not linears and sum(isinstance(m, Int8Linear) for m in q.model.modules()) == 2 * 7 + 1
    ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10]])
    with torch.no_grad():
        assert _rel(q.model(ids).logits, ref.model(ids).logits) < 0.05
    conv = [{"role": "user", "content": "hello world"}]
    gen = q.generate([conv, conv], SamplingParams(temperature=0.0, max_new_tokens=6))
    assert len(gen) == 2 and gen[0].text == gen[1].text and gen[0].completion_tokens >= 1
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before


def test_int8_refuses_a_shared_model(tmp_path: Any) -> None:
    """A model passed in may be the one training updates: converting it in place would corrupt it."""
    d = _tiny_llama(tmp_path)
    ref = HFPolicy(d, HFPolicyConfig(engine=EngineConfig(threads=1)))
    with pytest.raises(ClawloopError, match="quantize int8"):
        HFPolicy(d, HFPolicyConfig(engine=EngineConfig(threads=1, quantize="int8")), model=ref.model,
                 tokenizer=ref.tokenizer)
    assert quantize_linears(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())) == 1
