"""Faster CPU rollouts that keep the model's replies: guessed tokens checked in one forward pass
(clawloop.policy.engine.drafter + the decode loop) and the lean forward (clawloop.policy.engine.fast_forward), on small
random Qwen3, Qwen2 and Llama models."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from clawloop.config.engine import EngineConfig
from clawloop.core.agent.tool_calls import TOOLS, assistant_message, tool_message
from clawloop.errors import ClawloopError
from clawloop.policy.engine.decode_loop import accept, probabilities
from clawloop.policy.engine.drafter import Drafter, tool_call_snippets
from clawloop.policy.hf import HFPolicy, HFPolicyConfig
from clawloop.policy.types import SamplingParams

SYSTEM = {"role": "system", "content": "You are an agent."}
CONVS = [[SYSTEM, {"role": "user", "content": "List the files."}],
         [SYSTEM, {"role": "user", "content": "Count the lines of notes.txt and notes.txt again."}],
         [SYSTEM, {"role": "user", "content": "List the files."}, assistant_message("ls -la"),
          tool_message("a.txt\nb.txt\n[exit code 0]")]]


@pytest.fixture(scope="module")
def llama(tokenizer: Any) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                      tie_word_embeddings=True)
    return LlamaForCausalLM(cfg).eval()


def _random_biases(model: Any, seed: int) -> Any:
    """transformers initializes Linear biases to zero: random ones, so a test sees a dropped bias."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and m.bias is not None:
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.5)
    return model


def tiny_qwen2(tokenizer: Any, seed: int = 0, **cfg: Any) -> Any:
    """A random Qwen2ForCausalLM shaped like Qwen2.5-Coder-0.5B in small: q/k/v biases, an untied
    output head, grouped-query heads, rope theta 1e6, no q/k norms."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         rope_parameters={"rope_type": "default", "rope_theta": 1e6}, rms_norm_eps=1e-6,
                         tie_word_embeddings=False, **{"initializer_range": 0.2, **cfg})
    return _random_biases(Qwen2ForCausalLM(config).eval(), seed)


@pytest.fixture(scope="module")
def qwen2(tokenizer: Any) -> Any:
    return tiny_qwen2(tokenizer)


@pytest.fixture(scope="module")
def llama_bias(tokenizer: Any) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(2)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                      attention_bias=True, mlp_bias=True, tie_word_embeddings=True)
    return _random_biases(LlamaForCausalLM(cfg).eval(), 2)


def policy(model: Any, tokenizer: Any, **engine: Any) -> HFPolicy:
    return HFPolicy("unused", HFPolicyConfig(engine=EngineConfig(threads=1, **engine)), model=model, tokenizer=tokenizer)


def test_drafter_proposes_what_followed_the_longest_earlier_match() -> None:
    d = Drafter(3, snippets=[7, 8, 9, 10, 11])
    assert d([1, 2, 3, 4, 5, 1, 2, 3]) == [4, 5, 1]  # 3-token match, wins over shorter ones
    assert d([1, 2, 3, 4, 5, 1, 2, 3], k=1) == [4]
    assert d([5, 6, 9]) == [10, 11]  # nothing in the context: the snippets
    assert d([5, 6, 42]) == []  # the row's own last token is no match for itself
    assert d([]) == [] and Drafter(0)([1, 1]) == []


def test_drafter_guesses_from_earlier_replies() -> None:
    d = Drafter(3, snippets=[7, 8, 9, 10, 11], history_tokens=6)
    d.remember([20, 21, 22, 23, 9, 12])
    assert d([5, 20, 21]) == [22, 23, 9]  # an earlier reply's continuation
    assert d([5, 9]) == [12]  # the history comes before the snippets (same match length)
    assert d([9, 3, 5, 9]) == [3, 5, 9]  # and after the row's own context
    assert d([7, 8, 9]) == [10, 11]  # a longer match wins wherever it is
    d.remember([30, 31])
    assert d.history.tolist() == [22, 23, 9, 12, 30, 31]  # the newest tokens are kept
    assert d([5, 20, 21]) == [] and d([1, 30]) == [31]
    off = Drafter(3, history_tokens=0)
    off.remember([1, 2, 3])
    assert off.history.size == 0


def test_drafter_continues_a_loop_with_its_period() -> None:
    """A match running into the row's own tail (a model repeating itself) repeats what followed it."""
    assert Drafter(3)([5, 6, 6, 6]) == [6, 6, 6]
    assert Drafter(5)([7, 1, 2, 1, 2]) == [1, 2, 1, 2, 1]
    assert Drafter(5)([1, 2, 3, 9, 1, 2]) == [3, 9, 1, 2, 3]


def test_tool_call_snippets_are_the_chat_templates_own_wrapper(tokenizer: Any) -> None:
    text = tokenizer.decode(tool_call_snippets(tokenizer, TOOLS))
    assert '<tool_call>\n{"name": "bash", "arguments": {"command": "' in text
    assert '{"name": "submit", "arguments": {}}' in text and "</tool_call>" in text
    assert tool_call_snippets(tokenizer, None) == []


def test_accepting_guesses_keeps_the_greedy_token_and_the_sampling_distribution() -> None:
    logits = torch.tensor([[0.0, 3.0, 1.0], [2.0, 0.0, 0.0], [0.0, 0.0, 5.0]])
    assert accept(logits, [1, 0], 0.0, 1.0) == [1, 0, 2]  # both guesses right, then the model's
    assert accept(logits, [2, 0], 0.0, 1.0) == [1]  # first guess wrong: the model's token only
    # Sampled: the first token follows the model's distribution whatever was guessed.
    torch.manual_seed(0)
    want = probabilities(logits[:1], 1.0, 1.0)[0]
    for guess in (0, 1, 2):
        firsts = torch.tensor([accept(logits, [guess, 0], 1.0, 1.0)[0] for _ in range(4000)])
        got = torch.bincount(firsts, minlength=3).float() / len(firsts)
        assert torch.allclose(got, want, atol=0.03), (guess, got, want)


@pytest.mark.parametrize("arch", ["qwen3", "llama", "qwen2", "llama_bias"])
def test_fast_forward_matches_transformers(arch: str, request: pytest.FixtureRequest, tokenizer: Any) -> None:
    """Logits of a prefill (short, and long enough for fused attention) and of a step with a
    masked-out (rejected) column equal transformers'."""
    from transformers import StaticCache

    from clawloop.policy.engine.engine import hf_forward
    from clawloop.policy.engine.fast_forward import SDPA_TOKENS, FastLM

    model = request.getfixturevalue(arch)
    for P in (6, SDPA_TOKENS + 4):
        ids = torch.tensor([[5 + 4 * i for i in range(P)], [0, 0, *[7 + 4 * i for i in range(P - 2)]]])
        mask = torch.ones(2, P, dtype=torch.long)
        mask[1, :2] = 0
        mask[0, :1] = 0  # column 0 is padding for both rows: attention may start after it
        step = torch.tensor([[30, 31, 32], [40, 41, 0]])
        # Row 1's third column is padding; row 0's middle column a rejected guess in the next step.
        mask2 = torch.cat([mask, torch.tensor([[1, 1, 1], [1, 1, 0]])], dim=1)
        mask3 = mask2.clone()
        mask3[0, P + 1] = 0
        outs = []
        for forward in (hf_forward(model), FastLM(model)):
            cache = StaticCache(config=model.config, max_cache_len=P + 10)
            with torch.inference_mode():
                pos = (mask.cumsum(-1) - 1).clamp(min=0)
                a = forward(ids, mask, pos, cache, 0)
                b = forward(step, mask2, (mask2.cumsum(-1) - 1).clamp(min=0)[:, -3:], cache, P)
                mask4 = torch.cat([mask3, torch.ones(2, 1, dtype=torch.long)], 1)
                c = forward(torch.tensor([[50], [51]]), mask4, (mask4.cumsum(-1) - 1)[:, -1:], cache, P + 3)
            outs.append((a[mask.bool()], b[mask2[:, -3:].bool()], c))
        for x, y in zip(*outs, strict=True):
            assert torch.allclose(x, y, atol=1e-4), (P, (x - y).abs().max())
    # The fused matrices are the model's own memory (no second copy of the weights).
    fused = forward.layers[0]["qkv"].weight
    assert model.model.layers[0].self_attn.q_proj.weight.data_ptr() == fused.data_ptr()
    assert forward.head.weight.data_ptr() == model.get_output_embeddings().weight.data_ptr()
    att = model.model.layers[0].self_attn
    if att.q_proj.bias is not None:  # the biases too: q/k/v's are row blocks of the fused one
        assert att.q_proj.bias.data_ptr() == forward.layers[0]["qkv"].bias.data_ptr()
        assert torch.equal(forward.layers[0]["qkv"].bias[-att.v_proj.bias.shape[0]:], att.v_proj.bias)
    if arch == "qwen2":  # its own output head, not the embedding
        assert forward.head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()
        assert forward.layers[0]["q_norm"] is None and forward.layers[0]["o"].bias is None


def test_fast_engine_refuses_what_it_cannot_run(tokenizer: Any) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=1, n_head=2))
    with pytest.raises(ClawloopError, match="model_type 'gpt2'.*engine.forward hf runs any model"):
        policy(gpt2, tokenizer, forward="fast")
    from clawloop.bootstrap.scratch import build_model

    qwen3 = build_model("tiny", tokenizer, seed=1, max_positions=512)
    with pytest.raises(ClawloopError, match="decode generate"):
        policy(qwen3, tokenizer, forward="fast", decode="generate")
    # auto: the fast forward where it can run, transformers' elsewhere.
    from clawloop.policy.engine.fast_forward import FastLM

    assert not isinstance(policy(gpt2, tokenizer, forward="auto").engine.forward, FastLM)
    # Qwen2 with sliding-window layers (use_sliding_window, layers from max_window_layers on): hf only.
    windowed = tiny_qwen2(tokenizer, use_sliding_window=True, sliding_window=8, max_window_layers=1)
    with pytest.raises(ClawloopError, match="sliding-window layers"):
        policy(windowed, tokenizer, forward="fast")
    assert not isinstance(policy(windowed, tokenizer, forward="auto").engine.forward, FastLM)
    # use_sliding_window with every layer below max_window_layers: full attention everywhere, runs.
    unwindowed = tiny_qwen2(tokenizer, use_sliding_window=True, sliding_window=8, max_window_layers=2)
    assert isinstance(policy(unwindowed, tokenizer, forward="auto").engine.forward, FastLM)
    assert not isinstance(policy(qwen3, tokenizer, forward="auto", decode="generate").engine.forward, FastLM)
    assert isinstance(policy(qwen3, tokenizer, forward="auto").engine.forward, FastLM)


@pytest.mark.parametrize("arch", ["qwen3", "qwen2"])
@pytest.mark.parametrize("engine", ["hf", "fast"])
def test_guessing_keeps_greedy_replies_and_saves_forward_passes(engine: str, arch: str, request: pytest.FixtureRequest,
                                                                tokenizer: Any) -> None:
    """Batches of 1 and 3 rows, across turns (KV reuse), with guesses from the rows' own replies
    (an oracle drafter: every guess right) and from prompt lookup (mostly wrong on a random model):
    every reply equals the plain decode loop's, and right guesses cost fewer forward passes."""
    model = request.getfixturevalue(arch)
    greedy = SamplingParams(temperature=0.0, max_new_tokens=24)
    plain = policy(model, tokenizer)
    want = [g.text for g in plain.generate(CONVS, greedy, tools=TOOLS)]
    want1 = plain.generate(CONVS[:1], greedy, tools=TOOLS)[0]
    for rows in (CONVS, CONVS[:1]):
        p = policy(model, tokenizer, forward=engine, speculate=6, speculate_tokens=28)
        assert [g.text for g in p.generate(rows, greedy, tools=TOOLS)] == want[:len(rows)]
    # An oracle drafter guesses the plain reply: 24 tokens in ~4 passes instead of 24.
    p = policy(model, tokenizer, forward=engine, speculate=6)
    reply = list(want1.completion_ids)
    prompt = list(want1.prompt_ids)
    p.engine.drafter = lambda tools: (lambda ctx, k: reply[len(ctx) - len(prompt):][:k])  # type: ignore[method-assign,assignment,return-value]
    calls = []
    forward = p.engine.forward
    p.engine.forward = lambda ids, *a, **kw: calls.append(ids.shape) or forward(ids, *a, **kw)
    got = p.generate(CONVS[:1], greedy, tools=TOOLS)[0]
    assert got.text == want1.text
    assert len(calls) <= 2 + -(-len(reply) // 7), calls  # the prefill, then 7 tokens a pass


def test_the_policys_drafter_remembers_its_replies(qwen3: Any, tokenizer: Any) -> None:
    """After a reply the drafter holds its tokens (another episode of the task, a retried turn or
    the next command guesses from them); asked the same again, the greedy reply is the same."""
    greedy = SamplingParams(temperature=0.0, max_new_tokens=24)
    p = policy(qwen3, tokenizer, forward="fast", speculate=6)
    first = p.generate(CONVS[:2], greedy, tools=TOOLS)
    drafter = p.engine.drafter(TOOLS)
    assert drafter is not None
    history = drafter.history.tolist()
    assert sorted([history[:24], history[24:]]) == sorted(list(g.completion_ids) for g in first)
    assert [g.text for g in p.generate(CONVS[:2], greedy, tools=TOOLS)] == [g.text for g in first]


def test_guessing_samples_reproducibly(qwen3: Any, tokenizer: Any) -> None:
    sampled = SamplingParams(temperature=0.8, max_new_tokens=16, seed=3)
    a = policy(qwen3, tokenizer, speculate=4).generate(CONVS, sampled, tools=TOOLS)
    b = policy(qwen3, tokenizer, speculate=4).generate(CONVS, sampled, tools=TOOLS)
    assert [g.text for g in a] == [g.text for g in b]
    assert all(0 < g.completion_tokens <= 16 for g in a)


def test_qwen2_fast_engine_keeps_greedy_replies_over_two_turns(qwen2: Any, tokenizer: Any) -> None:
    """Qwen2 (q/k/v biases, untied head) on the fast engine with guesses and prompt reuse: three rows
    sharing the system prompt (two of them the whole first turn), two turns, every reply equal to
    the hf engine's plain decode loop and to transformers' generate; later prompts reuse the
    earlier ones' keys and values, and decode steps check guesses (mostly wrong on a random model:
    the oracle drafter of test_guessing_keeps_greedy_replies_and_saves_forward_passes counts the
    passes they save)."""
    from clawloop.policy.engine.fast_forward import FastLM

    greedy = SamplingParams(temperature=0.0, max_new_tokens=24)
    fast = policy(qwen2, tokenizer, forward="fast", speculate=8, kv_reuse_entries=16)
    refs = [policy(qwen2, tokenizer, kv_reuse_entries=0), policy(qwen2, tokenizer, decode="generate", kv_reuse_entries=0)]
    assert isinstance(fast.engine.forward, FastLM)
    passes: list[int] = []  # tokens per row of each forward pass
    forward = fast.engine.forward
    fast.engine.forward = lambda ids, *a, **kw: passes.append(ids.shape[1]) or forward(ids, *a, **kw)
    convs = [CONVS[0], CONVS[1], CONVS[0]]
    for turn in range(2):
        got = fast.generate(convs, greedy, tools=TOOLS)
        for ref in refs:
            assert [g.completion_ids for g in got] == [g.completion_ids for g in ref.generate(convs, greedy, tools=TOOLS)]
        convs = [[*c, {"role": "assistant", "content": g.text}, tool_message(f"f{turn}\n[exit code 0]")]
                 for c, g in zip(convs, got, strict=True)]
    store = fast.engine.prefix_store
    assert store is not None and store.reused_tokens > store.computed_tokens
    assert any(1 < t < 16 for t in passes), passes  # steps fed guesses: rows x (1 + guesses)
    assert sum(len(set(g.completion_ids)) > 4 for g in got) >= 2  # replies that are not a single repeated token


def test_fast_int8_packed_weights_give_the_same_sums_as_int_mm() -> None:
    """oneDNN's packed int8 product and `_int_mm` give the same sums on the same quantized weights
    and activations, at their largest too: 8-bit weights where the CPU has VNNI, 7-bit ones where
    its kernel would saturate 8-bit pairs of products (onednn_int8_levels)."""
    from clawloop.policy.engine.fast_forward import _Linear, onednn_int8_levels
    from clawloop.policy.engine.int8_linear import quantize_weight

    levels = onednn_int8_levels()
    if not levels:
        pytest.skip("no exact oneDNN int8 product on this CPU: _int_mm only")
    torch.manual_seed(0)
    w = torch.randn(96, 256)
    w[:, :8] = 3.0  # channels whose scale makes the first inputs' weights the largest level
    w[1::2, :8] = -3.0
    x = torch.randn(9, 256)
    x[0, :8], x[1, :8] = 40.0, -40.0  # activations at 127 and -127 against them
    packed, plain = _Linear([w], int8=True), _Linear([w], int8=True, prepack=False)
    assert packed.packed is not None and plain.packed is None and plain.levels == 127
    plain.weight, plain.scale = (lambda q, s: (q.t(), s))(*quantize_weight(w, packed.levels))
    assert torch.equal(packed(x), plain(x))
    assert levels in (127, 63) and packed.levels == levels


@pytest.mark.parametrize("arch", ["qwen3", "qwen2"])
def test_fast_int8_is_close_to_fp32(arch: str, request: pytest.FixtureRequest) -> None:
    """The int8 forward (packed where the CPU allows) is close to the fp32 one: a dropped or
    mis-scaled Qwen2 q/k/v bias, or saturated sums, would not be."""
    from transformers import StaticCache

    from clawloop.policy.engine.fast_forward import FastLM

    model = request.getfixturevalue(arch)
    ids = torch.tensor([[5, 9, 13, 17, 21, 25], [0, 0, 7, 11, 15, 19]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
    outs = []
    for forward in (FastLM(model), FastLM(model, int8=True), FastLM(model, int8=True, prepack=False)):
        cache = StaticCache(config=model.config, max_cache_len=8)
        with torch.inference_mode():
            outs.append(forward(ids, mask, (mask.cumsum(-1) - 1).clamp(min=0), cache, 0)[mask.bool()])
    ref = outs[0]
    for y in outs[1:]:
        # without Qwen2's q/k/v biases: 0.67.
        assert ((y - ref).norm() / ref.norm()) < 0.1, ((y - ref).norm() / ref.norm())


@pytest.mark.parametrize("arch", ["qwen3", "qwen2"])
def test_fast_int8_policy_runs_and_keeps_the_model_fp32(arch: str, request: pytest.FixtureRequest,
                                                        tokenizer: Any) -> None:
    model = request.getfixturevalue(arch)
    before = model.model.layers[0].mlp.up_proj.weight.clone()
    p = policy(model, tokenizer, forward="fast", quantize="int8", speculate=4)
    out = p.generate(CONVS, SamplingParams(temperature=0.0, max_new_tokens=12), tools=TOOLS)
    assert len(out) == 3 and all(0 < g.completion_tokens <= 12 for g in out)
    assert type(model.model.layers[0].mlp.up_proj) is torch.nn.Linear
    assert torch.equal(model.model.layers[0].mlp.up_proj.weight, before)


def test_decode_loop_masks_rejected_guesses_and_grows_the_cache_for_a_runaway_row() -> None:
    """A counting "model" (next token = last + 1, 0 ends a row) and a drafter whose third guess is
    always wrong: every row gets the model's own tokens; each step's rejected columns are masked
    out; the batch guesses once it is small enough (draft_tokens=4: one guess each for two rows,
    three for one row alone), the cache growing for them."""
    from types import SimpleNamespace

    from clawloop.policy.engine.decode_loop import DecodeBatch, Decoding, decode

    vocab, rows = 40, 3
    layers = [SimpleNamespace(keys=torch.zeros(rows, 1, 32, 2), values=torch.zeros(rows, 1, 32, 2), max_cache_len=32)]
    cache = SimpleNamespace(layers=layers)
    steps: list[tuple[int, int, int]] = []

    def forward(ids: Any, mask: Any, positions: Any, cache_: Any, start: int, last_only: bool = False) -> Any:
        assert mask.shape == (ids.shape[0], start + ids.shape[1])
        live = mask[:, :start].sum(-1)  # columns each row sees: its prompt and the tokens it kept
        assert torch.equal(positions[:, 0], live)
        steps.append((ids.shape[0], ids.shape[1], cache_.layers[0].keys.shape[2]))
        nxt = (ids + 1) % vocab
        nxt[nxt == 34] = 0  # the rows end at 33
        return torch.nn.functional.one_hot(nxt, vocab).float()

    def drafter(ctx: list[int], k: int) -> list[int]:
        return [(ctx[-1] + 1) % vocab, (ctx[-1] + 2) % vocab, 1][:k]

    ids = torch.tensor([[9, 30], [9, 20], [9, 10]])
    out = decode(forward, DecodeBatch(ids, torch.ones(3, 2, dtype=torch.long), cache, 0, capacity=32),
                 Decoding(max_new=30, stop_ids={0}, drafter=drafter, draft_tokens=4))
    assert [t for t, _ in out] == [[31, 32, 33, 0], [*range(21, 34), 0], [*range(11, 34), 0]]
    assert all(done for _, done in out)
    # Three rows step one token at a time; the last one, alone, 3 tokens a step in a grown cache.
    assert [s[:2] for s in steps[:4]] == [(3, 2), (3, 1), (3, 1), (3, 1)]
    alone = [s for s in steps if s[0] == 1]
    assert alone and all(width == 4 for _, width, _ in alone) and alone[-1][2] > 32
    assert len(alone) <= -(-13 // 3) + 1
