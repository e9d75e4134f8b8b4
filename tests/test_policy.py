"""Policies: scripted, transformers (a small random model), OpenAI-compatible HTTP (a fake server)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from scripted_policy import ScriptedPolicy

from clawloop.config.engine import EngineConfig
from clawloop.core.agent.tool_calls import TOOLS, assistant_message, parse_reply, tool_message
from clawloop.errors import ClawloopError
from clawloop.policy.hf import HFPolicy, HFPolicyConfig
from clawloop.policy.load import PolicySpec, load_policy
from clawloop.policy.types import OpenAIPolicyConfig, SamplingParams

CONV = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "List the files."}]


def test_scripted_policy_counts_turns() -> None:
    p = ScriptedPolicy(["a", b"\xffb"], default="z")
    conv2 = [*CONV, {"role": "assistant", "content": "a"}, {"role": "user", "content": "hint"}]
    out = p.generate([CONV, conv2], SamplingParams())
    assert [g.text for g in out] == ["a", "\ufffdb"]
    assert p.generate([conv2 + [{"role": "assistant", "content": "x"}]], SamplingParams())[0].text == "z"
    assert p.calls == [2, 1] and p.policy_id == "scripted"
    p = ScriptedPolicy(lambda conv: f"n={len(conv)}")
    assert p.generate([CONV], SamplingParams())[0].text == "n=2"


def test_load_policy_specs(tmp_path: Path) -> None:
    with pytest.raises(ClawloopError, match="model directory not found"):
        load_policy(str(tmp_path / "missing"))
    with pytest.raises(ClawloopError, match="model directory not found"):
        load_policy("vllm:/nope")
    p = load_policy("openai:my-model@http://127.0.0.1:9/v1")
    assert p.policy_id == "my-model" and p.config.base_url == "http://127.0.0.1:9/v1"
    p = load_policy({"backend": "openai", "model": "m", "policy_id": "pid"})
    assert p.policy_id == "pid"
    assert PolicySpec(model="x").backend == "hf"


# --- transformers backend on a small random Qwen3 -----------------------------------------------

@pytest.fixture(scope="module")
def small_hf() -> HFPolicy:
    from clawloop.bootstrap.corpus import corpus
    from clawloop.bootstrap.scratch import build_model, build_tokenizer, train_tokenizer

    raw = train_tokenizer("split", 640, texts=corpus(0, n_pairs=500, n_chats=100))
    tok = build_tokenizer(raw)
    model = build_model("tiny", tok, seed=0, max_positions=4096)
    return HFPolicy("unused", model=model, tokenizer=tok, policy_id="rand")


def test_hf_batched_greedy_equals_single(small_hf: HFPolicy) -> None:
    long = [*CONV, assistant_message("ls -la"), tool_message("a.txt\nb.txt\n[exit code 0]")]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=12)
    single = small_hf.generate([CONV], greedy, tools=TOOLS)[0]
    both = small_hf.generate([long, CONV], greedy, tools=TOOLS)
    assert both[1].text == single.text  # left padding does not change the reply
    assert single.prompt_tokens < both[0].prompt_tokens
    assert single.completion_tokens <= 12 and single.finish_reason in ("stop", "length")
    assert single.prompt_ids is not None and len(single.prompt_ids) == single.prompt_tokens
    assert "<|im_end|>" not in single.text


def test_hf_kv_reuse_matches_full_prefill(small_hf: HFPolicy) -> None:
    fresh = HFPolicy("unused", HFPolicyConfig(engine=EngineConfig(kv_reuse_entries=0)), model=small_hf.model,
                     tokenizer=small_hf.tokenizer)
    reuse = HFPolicy("unused", HFPolicyConfig(engine=EngineConfig(kv_reuse_entries=8)), model=small_hf.model,
                     tokenizer=small_hf.tokenizer)
    greedy = SamplingParams(temperature=0.0, max_new_tokens=10)
    other = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Count lines."}]
    convs = [CONV, [*CONV, {"role": "user", "content": "and the hidden ones"}], other, other, CONV]
    for turn in range(3):
        a = reuse.generate(convs, greedy, tools=TOOLS)
        b = fresh.generate(convs, greedy, tools=TOOLS)
        assert [g.text for g in a] == [g.text for g in b]
        assert [g.prompt_tokens for g in a] == [g.prompt_tokens for g in b]
        convs = [[*c, assistant_message(f"ls {turn}"), tool_message(f"f{turn}\n[exit code 0]")] for c in convs]
        if turn == 0:
            convs.append(CONV)  # a new episode joins the batch mid-way
    store = reuse.engine.prefix_store
    assert store is not None and store.reused_tokens > store.computed_tokens
    assert fresh.engine.prefix_store is None


def test_fast_engine_cache_skips_zeroing_yet_reads_no_garbage(small_hf: HFPolicy,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast forward's cache (prefix_cache.ColumnCache) is allocated without zeroing: every column it
    reads must have been written or zeroed. Fresh memory here is all NaN, which would reach every
    reply through the masked padding before a shorter reused prefix (0 x NaN = NaN)."""
    import torch

    from clawloop.policy.engine import engine, prefix_cache

    empty = torch.empty

    def nan_empty(*args: object, **kwargs: object) -> torch.Tensor:
        t = empty(*args, **kwargs)  # type: ignore[arg-type]
        return t.fill_(float("nan")) if t.is_floating_point() else t

    layouts: list[object] = []
    real_layout = prefix_cache.layout
    monkeypatch.setattr(torch, "empty", nan_empty)
    monkeypatch.setattr(engine, "layout", lambda *a, **k: layouts.append(r := real_layout(*a, **k)) or r)
    fast = HFPolicy("unused", HFPolicyConfig(engine=EngineConfig(kv_reuse_entries=8, forward="fast", speculate=4)),
                    model=small_hf.model, tokenizer=small_hf.tokenizer)
    ref = HFPolicy("unused", HFPolicyConfig(engine=EngineConfig(kv_reuse_entries=0)), model=small_hf.model,
                   tokenizer=small_hf.tokenizer)
    greedy = SamplingParams(temperature=0.0, max_new_tokens=10)
    other = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Count lines."}]
    convs = [CONV, [*CONV, {"role": "user", "content": "and the hidden ones"}], other, CONV]
    for turn in range(2):
        a = fast.generate(convs, greedy, tools=TOOLS)
        assert [g.text for g in a] == [g.text for g in ref.generate(convs, greedy, tools=TOOLS)], turn
        convs = [[*c, assistant_message(f"ls {turn}"), tool_message(f"f{turn}\n[exit code 0]")] for c in convs]
    caches = [lay[2] for lay in layouts if isinstance(lay[2], prefix_cache.ColumnCache)]
    assert caches and any(lay[3] for lay in layouts)  # the fast engine's caches, some with reused prefixes


@pytest.mark.parametrize("engine", [{}, {"forward": "fast", "speculate": 8}])
def test_hf_kv_reuse_keeps_each_replys_keys_for_the_next_turn(small_hf: HFPolicy, engine: dict) -> None:
    """The next turn re-sends the model's reply: only the tool output is new. With guesses, the
    reply's keys come from the live columns between rejected ones."""
    reuse, fresh = (HFPolicy("unused", HFPolicyConfig(engine=EngineConfig(kv_reuse_entries=n, **engine)),
                             model=small_hf.model, tokenizer=small_hf.tokenizer) for n in (8, 0))
    greedy = SamplingParams(temperature=0.0, max_new_tokens=10)
    convs = [CONV, [*CONV, {"role": "user", "content": "and the hidden ones"}]]
    store = reuse.engine.prefix_store
    assert store is not None
    before: list[int] = []
    replied: list[int] = []
    for turn in range(3):
        computed = store.computed_tokens
        a = reuse.generate(convs, greedy, tools=TOOLS)
        assert [g.text for g in a] == [g.text for g in fresh.generate(convs, greedy, tools=TOOLS)]
        if turn:  # this turn computed the tool outputs and the template's text around them, not the replies
            grown = sum(g.prompt_tokens - p for g, p in zip(a, before, strict=True))
            assert store.computed_tokens - computed <= grown - sum(replied) + len(a)
        before, replied = [g.prompt_tokens for g in a], [g.completion_tokens for g in a]
        convs = [[*c, {"role": "assistant", "content": g.text}, tool_message(f"f{turn}\n[exit code 0]")]
                 for c, g in zip(convs, a, strict=True)]
        for c, g in zip(convs, a, strict=True):
            ids = reuse.tokenizer(reuse.render(c, TOOLS), add_special_tokens=False)["input_ids"]
            assert store.lookup(ids).length >= g.prompt_tokens + g.completion_tokens - 1, (turn, g.text)


def test_prefix_store_keeps_an_entry_the_new_prompt_only_shares_a_prefix_with() -> None:
    from clawloop.policy.engine.prefix_cache import PrefixStore

    store = PrefixStore(8)
    a, b = list(range(40)), [*range(30), *range(100, 120)]
    store.put(a, [])
    hit = store.lookup(b)
    assert hit.length == 30
    store.put(b, [], replaces=hit.key)  # b does not extend a: a must stay
    assert store.lookup(a + [7]).length == 40
    longer = [*a, 1, 2, 3]
    store.put(longer, [], replaces=store.lookup(longer).key)  # extends a: a is dropped
    assert len(store.entries) == 2 and store.lookup(a + [7]).length == 40


def test_prefill_groups_cover_every_row_once_with_little_padding() -> None:
    import random

    from clawloop.policy.engine.prefix_cache import prefill_groups

    rng = random.Random(0)
    cached = [rng.randint(200, 600) for _ in range(40)]
    new = [rng.randint(20, 400) for _ in range(40)]
    groups = prefill_groups(cached, new, slack=0.25, most=16)
    assert sorted(i for g in groups for i in g) == list(range(40))
    for g in groups:
        assert len(g) <= 16
        real = sum(new[i] * (cached[i] + new[i]) for i in g)
        padded = len(g) * max(new[i] for i in g) * (max(cached[i] for i in g) + max(new[i] for i in g))
        assert padded <= 1.25 * real
    assert len(groups) < 40  # rows of similar length do share a forward


def test_hf_seeded_sampling_is_reproducible(small_hf: HFPolicy) -> None:
    s = SamplingParams(temperature=1.0, max_new_tokens=8, seed=3)
    a = [g.text for g in small_hf.generate([CONV, CONV], s, tools=TOOLS)]
    small_hf.engine._calls = __import__("itertools").count()
    b = [g.text for g in small_hf.generate([CONV, CONV], s, tools=TOOLS)]
    assert a == b


def test_hf_prompt_over_context_is_not_generated(small_hf: HFPolicy) -> None:
    huge = [*CONV, {"role": "user", "content": "word " * 5000}]
    out = small_hf.generate([huge, CONV], SamplingParams(temperature=0, max_new_tokens=4))
    assert out[0].finish_reason == "context" and out[0].text == "" and out[0].completion_tokens == 0
    assert out[1].finish_reason in ("stop", "length")


# --- OpenAI-compatible endpoint ---------------------------------------------------------------

class _Fake(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]] = []
    fail_first = 0

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        if type(self).fail_first > 0:
            type(self).fail_first -= 1
            self.send_response(503)
            self.end_headers()
            return
        last = body["messages"][-1]["content"] or ""
        if "broken" in last:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": '}}]}
        elif "text" in last:
            message = {"role": "assistant", "content": "I am done."}
        else:
            message = {"role": "assistant", "content": "Listing.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls -la"}'}}]}
        data = json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                           "usage": {"prompt_tokens": 42, "completion_tokens": 7}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def fake_server() -> Iterator[str]:
    _Fake.requests = []
    _Fake.fail_first = 0
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_openai_policy_round_trip(fake_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAWLOOP_TEST_KEY", "sekret")
    p = load_policy(PolicySpec(backend="openai", model="served", openai=OpenAIPolicyConfig(
        base_url=fake_server, api_key_env="CLAWLOOP_TEST_KEY", retries=0)))
    conv = [*CONV, assistant_message("pwd"), tool_message("/workspace\n[exit code 0]")]
    out = p.generate([conv, [*CONV[:1], {"role": "user", "content": "text only"}],
                      [*CONV[:1], {"role": "user", "content": "broken"}]],
                     SamplingParams(temperature=0.5, max_new_tokens=64, seed=1), tools=TOOLS)
    call = parse_reply(out[0].text)
    assert call.command == "ls -la" and call.content == "Listing."
    assert (out[0].prompt_tokens, out[0].completion_tokens) == (42, 7)
    assert out[1].text == "I am done." and parse_reply(out[1].text).kind == "no_tool_call"
    assert parse_reply(out[2].text).kind == "bad_json"
    req = next(r for r in _Fake.requests if r["messages"][-1]["role"] == "tool")
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sekret"
    assert req["model"] == "served" and req["tools"] == TOOLS and req["max_tokens"] == 64
    a, t = req["messages"][2], req["messages"][3]
    assert a["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command": "pwd"}'}
    assert t["tool_call_id"] == a["tool_calls"][0]["id"]


def test_openai_policy_retries_then_fails(fake_server: str) -> None:
    _Fake.fail_first = 1
    p = load_policy(PolicySpec(backend="openai", model="m", openai=OpenAIPolicyConfig(
        base_url=fake_server, retries=1, backoff_s=0.01)))
    assert parse_reply(p.generate([CONV], SamplingParams())[0].text).command == "ls -la"
    _Fake.fail_first = 5
    with pytest.raises(ClawloopError, match="HTTP 503"):
        p.generate([CONV], SamplingParams())


# --- vLLM backend against a stand-in `vllm` module (the real one needs a GPU) -------------------

def test_vllm_policy_with_a_stand_in_engine(small_hf: HFPolicy, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types
    from types import SimpleNamespace

    from clawloop.policy.types import VLLMPolicyConfig
    from clawloop.policy.vllm import VLLMPolicy

    small_hf.tokenizer.save_pretrained(tmp_path)
    seen: dict[str, Any] = {}

    class LLM:
        def __init__(self, **kw: Any) -> None:
            seen["init"] = kw
            self.llm_engine = SimpleNamespace(model_config=SimpleNamespace(max_model_len=300))

        def generate(self, prompts: list[dict[str, Any]], params: list[Any], *, use_tqdm: bool,
                     lora_request: Any) -> list[Any]:
            seen["prompts"], seen["params"], seen["lora"] = prompts, params, lora_request
            outs = [SimpleNamespace(text=bash_call + "<|im_end|>", token_ids=[5, 6, 7], finish_reason="stop"),
                    SimpleNamespace(text="partial", token_ids=[8] * 4, finish_reason="length")]
            return [SimpleNamespace(outputs=[o]) for o in outs[:len(prompts)]]

    bash_call = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
    vllm = types.ModuleType("vllm")
    vllm.LLM = LLM  # type: ignore[attr-defined]
    vllm.SamplingParams = lambda **kw: kw  # type: ignore[attr-defined]
    lora_mod = types.ModuleType("vllm.lora.request")
    lora_mod.LoRARequest = lambda name, i, path: (name, i, path)  # type: ignore[attr-defined]
    for name, mod in (("vllm", vllm), ("vllm.lora", types.ModuleType("vllm.lora")), ("vllm.lora.request", lora_mod)):
        monkeypatch.setitem(sys.modules, name, mod)

    p = VLLMPolicy(tmp_path, VLLMPolicyConfig(lora_path="/adapters/a1", max_lora_rank=16), policy_id="v")
    assert seen["init"]["enable_lora"] and seen["init"]["max_lora_rank"] == 16 and p.max_context == 300
    huge = [*CONV, {"role": "user", "content": "word " * 400}]
    out = p.generate([CONV, huge, CONV], SamplingParams(temperature=0.7, max_new_tokens=64, seed=2), tools=TOOLS)
    assert parse_reply(out[0].text).command == "ls" and out[0].completion_tokens == 3
    assert out[1].finish_reason == "context" and out[2].finish_reason == "length"
    assert len(seen["prompts"]) == 2 and seen["lora"] == ("adapter", 1, "/adapters/a1")
    expected = small_hf.generate([CONV], SamplingParams(max_new_tokens=1), tools=TOOLS)[0].prompt_ids
    assert tuple(seen["prompts"][0]["prompt_token_ids"]) == expected  # same rendering as HFPolicy
    prm = seen["params"][0]
    assert prm["temperature"] == 0.7 and prm["stop"] == ["<|im_end|>"] and prm["skip_special_tokens"] is False
    assert prm["max_tokens"] == min(64, 300 - len(expected))
