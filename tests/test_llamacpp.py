"""The llama.cpp rollout backend: GGUF export checked by two independent readers (transformers'
GGUF loader and llama-server itself), the server's life cycle, and the HF decode loop."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from clawloop.core.agent.tool_calls import TOOLS, assistant_message, tool_message
from clawloop.errors import ClawloopError
from clawloop.policy.hf import HFPolicy, HFPolicyConfig
from clawloop.policy.types import LlamaCppPolicyConfig, SamplingParams

CONVS = [
    [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "List the files."}],
    [{"role": "user", "content": "Count the lines of notes.txt"}],
    [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "List the files."},
     assistant_message("ls -la"), tool_message("a.txt\nb.txt\n[exit code 0]")],
    [{"role": "user", "content": "Make deploy.sh executable, please."}],
]
GREEDY = SamplingParams(temperature=0.0, max_new_tokens=10)


def _server() -> Path | None:
    from clawloop.policy.llamacpp import find_server

    try:
        return find_server()
    except ClawloopError:
        return None


needs_server = pytest.mark.skipif(_server() is None, reason="llama-server is not built (scripts/setup.sh builds it)")


def _save(model: Any, tok: Any, d: Path) -> Path:
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def qwen3_dir(tokenizer: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch Qwen3 (the bootstrap's architecture), weights scaled up so that greedy choices
    are clear-cut rather than near-ties decided by rounding."""
    import torch

    from clawloop.bootstrap.scratch import build_model

    model = build_model("tiny", tokenizer, seed=0, max_positions=4096)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(4.0)
    return _save(model, tokenizer, tmp_path_factory.mktemp("qwen3"))


@pytest.fixture(scope="module")
def llama_dir(tokenizer: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small random LlamaForCausalLM (SmolLM2's architecture: grouped KV heads, tied embeddings)."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=4096, tie_word_embeddings=True, rope_theta=10000.0,
                         eos_token_id=eos, pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
                         initializer_range=0.2)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=[eos], pad_token_id=tokenizer.pad_token_id)
    return _save(model, tokenizer, tmp_path_factory.mktemp("llama"))


def test_exported_gguf_loads_back_into_transformers_with_the_same_logits(llama_dir: Path, tmp_path: Path) -> None:
    """transformers' own GGUF reader (which undoes llama.cpp's q/k layout) gets the same model.
    (Its qwen3 reader ignores attention.key_length and assumes head_dim 128: the qwen3 export
    is checked against llama-server itself below.)"""
    import torch
    from transformers import AutoModelForCausalLM

    from clawloop.policy.gguf_export import export_gguf

    src = llama_dir
    meta = export_gguf(src, tmp_path / "m.gguf", qtype="f32")
    assert meta["architecture"] == "llama" and (tmp_path / "m.gguf").is_file()
    assert not list(tmp_path.glob(".*tmp*")), "the temporary file was renamed into place"
    a = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32).eval()
    b = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file="m.gguf", dtype=torch.float32).eval()
    ids = torch.tensor([[5, 17, 42, 99, 7, 3, 250, 31]])
    with torch.no_grad():
        la, lb = a(ids).logits, b(ids).logits
    assert torch.allclose(la, lb, atol=1e-4), (la - lb).abs().max()


def test_gguf_metadata_names_the_end_of_turn_and_the_vocabulary(qwen3_dir: Path, tmp_path: Path) -> None:
    import gguf

    from clawloop.policy.gguf_export import export_gguf

    export_gguf(qwen3_dir, tmp_path / "q.gguf", qtype="q8_0")
    r = gguf.GGUFReader(tmp_path / "q.gguf")
    tok = json.loads((qwen3_dir / "tokenizer.json").read_text())
    im_end = next(t["id"] for t in tok["added_tokens"] if t["content"] == "<|im_end|>")
    assert r.fields["tokenizer.ggml.eos_token_id"].contents() == im_end
    assert len(r.fields["tokenizer.ggml.tokens"].data) == json.loads((qwen3_dir / "config.json").read_text())["vocab_size"]
    types = {t.name: t.tensor_type.name for t in r.tensors}
    assert types["blk.0.attn_q.weight"] == "Q8_0" and types["blk.0.attn_norm.weight"] == "F32"
    assert "output.weight" not in types  # tied embeddings: llama.cpp reuses token_embd


def test_export_refuses_what_it_cannot_convert(qwen3_dir: Path, tmp_path: Path) -> None:
    from clawloop.policy.gguf_export import cached_gguf, export_gguf

    bad = tmp_path / "gpt2"
    shutil.copytree(qwen3_dir, bad)
    cfg = json.loads((bad / "config.json").read_text())
    cfg["architectures"] = ["GPT2LMHeadModel"]
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ClawloopError, match=r"config.json: architectures \['GPT2LMHeadModel'\].*rollout.backend hf"):
        export_gguf(bad, tmp_path / "x.gguf")
    assert not (tmp_path / "x.gguf").exists()
    with pytest.raises(ClawloopError, match="empty: config.json is missing"):
        cached_gguf(tmp_path / "empty")


def test_conversions_are_cached_by_content(qwen3_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clawloop.policy.gguf_export import cached_gguf

    monkeypatch.setenv("CLAWLOOP_CACHE", str(tmp_path / "cache"))
    first = cached_gguf(qwen3_dir, qtype="f16")
    mtime = first.stat().st_mtime_ns
    assert cached_gguf(qwen3_dir, qtype="f16") == first and first.stat().st_mtime_ns >= mtime
    copy = tmp_path / "copy"
    shutil.copytree(qwen3_dir, copy)
    assert cached_gguf(copy, qtype="f16") == first  # same bytes, same file
    (copy / "config.json").write_text((copy / "config.json").read_text().replace("4096", "2048"))
    assert cached_gguf(copy, qtype="f16") != first


@needs_server
@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_llamacpp_replies_equal_transformers_greedy(arch: str, llama_dir: Path, qwen3_dir: Path,
                                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clawloop.policy.llamacpp import LlamaCppPolicy

    monkeypatch.setenv("CLAWLOOP_CACHE", str(tmp_path))
    src = llama_dir if arch == "llama" else qwen3_dir
    hf = HFPolicy(src, HFPolicyConfig(dtype="float32", engine={"threads": 1}))
    with LlamaCppPolicy(src, LlamaCppPolicyConfig(gguf_type="f32", threads=1, parallel=4,
                                                  context_per_slot=1024)) as lc:
        ours = lc.generate(CONVS, GREEDY, tools=TOOLS)
        again = lc.generate(CONVS, GREEDY, tools=TOOLS)  # turn 2: slots reuse their caches
        ref = hf.generate(CONVS, GREEDY, tools=TOOLS)
        assert [g.completion_ids for g in ours] == [g.completion_ids for g in ref]
        assert [g.text for g in ours] == [g.text for g in ref] == [g.text for g in again]
        assert [g.prompt_ids for g in ours] == [g.prompt_ids for g in ref]
        assert [g.finish_reason for g in ours] == [g.finish_reason for g in ref]
        too_long = [[{"role": "user", "content": "word " * 2000}]]
        assert lc.generate(too_long, GREEDY)[0].finish_reason == "context"
        socket_dir, pid = Path(lc.socket).parent, lc.process.pid
    assert not socket_dir.exists()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # the server's whole process group is gone


@needs_server
def test_llamacpp_sampling_is_seeded(qwen3_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clawloop.policy.llamacpp import LlamaCppPolicy

    monkeypatch.setenv("CLAWLOOP_CACHE", str(tmp_path))
    cfg = LlamaCppPolicyConfig(gguf_type="q8_0", threads=1, parallel=4, context_per_slot=1024)
    hot = SamplingParams(temperature=1.5, max_new_tokens=12, seed=7)
    # One request at a time: under concurrency the server's batch composition depends on timing,
    # which moves logits by rounding, so sampled replies repeat only up to numerics.
    with LlamaCppPolicy(qwen3_dir, cfg) as a, LlamaCppPolicy(qwen3_dir, cfg) as b:
        ra = [a.generate([c], hot)[0].text for c in CONVS]
        rb = [b.generate([c], hot)[0].text for c in CONVS]
        assert ra == rb
        assert len(set(ra + [a.generate([c], hot)[0].text for c in CONVS])) > len(CONVS)


def test_llamacpp_without_a_server_says_how_to_build_it(qwen3_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clawloop.policy import llamacpp as llamacpp_policy
    from clawloop.policy.load import PolicySpec, load_policy, resolve_auto_backend

    monkeypatch.setattr(llamacpp_policy.Path, "is_file", lambda self: False)
    monkeypatch.setattr(llamacpp_policy.shutil, "which", lambda name: None)
    with pytest.raises(ClawloopError, match="llama-server not found; run scripts/setup.sh"):
        load_policy(f"llamacpp:{qwen3_dir}")
    assert resolve_auto_backend(PolicySpec(backend="auto", model=str(qwen3_dir), llamacpp={"parallel": 1})) == "hf"


@needs_server
def test_auto_picks_llamacpp_on_a_cpu_for_a_convertible_checkpoint(qwen3_dir: Path) -> None:
    from clawloop.policy.load import PolicySpec, resolve_auto_backend

    small = {"parallel": 1}
    assert resolve_auto_backend(PolicySpec(backend="auto", model=str(qwen3_dir), llamacpp=small)) == "llamacpp"
    assert resolve_auto_backend(PolicySpec(backend="auto", model=str(qwen3_dir))) == "hf"  # batch 36
    assert resolve_auto_backend(PolicySpec(backend="auto", model=str(qwen3_dir), llamacpp=small,
                                           hf={"engine": {"speculate": 8}})) == "hf"  # guesses: hf is as fast
    assert resolve_auto_backend(PolicySpec(backend="auto", model=str(qwen3_dir), llamacpp=small,
                                           hf={"device": "cuda"})) == "hf"


# --- HF decode loop -------------------------------------------------------------------------------

def test_decode_loop_equals_generate_and_drops_finished_rows(qwen3_dir: Path) -> None:
    """Greedy replies are those of transformers' generate; a row that stops leaves the batch."""
    loop = HFPolicy(qwen3_dir, HFPolicyConfig(engine={"threads": 1, "decode": "loop", "kv_reuse_entries": 0}))
    ref = HFPolicy(qwen3_dir, HFPolicyConfig(engine={"threads": 1, "decode": "generate", "kv_reuse_entries": 0}),
                   model=loop.model, tokenizer=loop.tokenizer)
    # Make the first greedy token of one conversation a stop token, so its row ends at once.
    first = ref.generate(CONVS[1:2], SamplingParams(temperature=0.0, max_new_tokens=1), tools=TOOLS)[0]
    for p in (loop, ref):
        p.engine.stop_ids = [*p.engine.stop_ids, first.completion_ids[0]]
    rows: list[int] = []
    forward = loop.model.forward

    def counting(*args: Any, **kwargs: Any) -> Any:
        rows.append(kwargs["input_ids"].shape[0])
        return forward(*args, **kwargs)

    loop.model.forward = counting
    try:
        a = loop.generate(CONVS, GREEDY, tools=TOOLS)
    finally:
        loop.model.forward = forward
    b = ref.generate(CONVS, GREEDY, tools=TOOLS)
    assert [g.completion_ids for g in a] == [g.completion_ids for g in b]
    assert [g.text for g in a] == [g.text for g in b]
    assert [g.finish_reason for g in a] == [g.finish_reason for g in b]
    assert a[1].completion_tokens == 1 and a[1].finish_reason == "stop" and a[1].text == ""
    assert rows[0] == len(CONVS) and min(rows) < len(CONVS), rows  # the stopped row left


def test_decode_loop_sampling_is_seeded_and_honours_stop_strings(qwen3_dir: Path) -> None:
    p = HFPolicy(qwen3_dir, HFPolicyConfig(engine={"threads": 1}))
    hot = SamplingParams(temperature=1.2, top_p=0.9, max_new_tokens=12, seed=3)
    a = [g.text for g in p.generate(CONVS, hot)]
    q = HFPolicy(qwen3_dir, HFPolicyConfig(engine={"threads": 1}), model=p.model, tokenizer=p.tokenizer)
    assert a == [g.text for g in q.generate(CONVS, hot)]
    text = p.generate(CONVS[:1], GREEDY)[0].text
    stop = text[2:4]
    cut = p.generate(CONVS[:1], GREEDY.model_copy(update={"stop": [stop]}))[0]
    assert cut.text == text[:text.index(stop)] and cut.finish_reason == "stop"


def test_top_p_keeps_the_nucleus() -> None:
    import torch

    from clawloop.policy.engine.decode_loop import sample_next

    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    torch.manual_seed(0)
    seen = {int(sample_next(logits, 1.0, 0.7)) for _ in range(300)}
    assert seen == {0, 1}  # 0.5 + 0.3 reaches 0.7; the tail is never drawn
    assert int(sample_next(logits, 0.0, 1.0)) == 0


@needs_server
def test_the_loop_rolls_out_on_llamacpp(qwen3_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """params.yaml's rollout section → RolloutSettings.load_policy → lockstep rollouts in bwrap sandboxes."""
    import yaml

    from clawloop.config.params import load_params
    from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
    from clawloop.core.rollout_settings import rollout_settings
    from clawloop.phases.evaluate.agent_eval import load_suite
    from clawloop.policy.llamacpp import LlamaCppPolicy

    monkeypatch.setenv("CLAWLOOP_CACHE", str(tmp_path / "cache"))
    root = Path(__file__).resolve().parents[1]
    raw = yaml.safe_load((root / "params.yaml").read_text())
    raw["rollout"].update(backend="llamacpp", batch=2, max_turns=2, max_new_tokens=16)
    raw["rollout"]["engine"]["threads"] = 1
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    params = load_params(tmp_path / "params.yaml")
    policy = rollout_settings(params).load_policy(qwen3_dir, "it-0")
    try:
        assert isinstance(policy, LlamaCppPolicy) and policy.config.parallel == 2
        harness, sampling = rollout_settings(params).harness, rollout_settings(params).sampling
        tasks = [t for t in load_suite(root / "benchmarks" / "shell-core").tasks if not t.needs_image][:2]
        res = run_rollouts(tasks, policy,
                           RolloutConfig(k=1, batch_size=2, backend="bwrap", harness=harness, sampling=sampling),
                           out_dir=tmp_path / "out", progress=False)
    finally:
        policy.close()
    assert [r.outcome for r in res] == ["failed", "failed"]  # a random model passes nothing
    assert all(r.completion_tokens > 0 and r.n_turns >= 1 for r in res)
    assert list((tmp_path / "out").glob("episodes-*.parquet"))


def test_model_gguf_command(qwen3_dir: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    import clawloop.commands.model_cmd  # noqa: F401  (registers `model gguf`)
    from clawloop.commands import app

    runner = CliRunner()
    r = runner.invoke(app, ["model", "gguf", str(qwen3_dir), "--out", str(tmp_path / "m.gguf"), "--type", "f16"])
    assert r.exit_code == 0, r.output
    assert "qwen3, f16" in r.output and (tmp_path / "m.gguf").stat().st_size > 0
    r = runner.invoke(app, ["model", "gguf", str(qwen3_dir), "--out", str(tmp_path / "x.gguf"), "--type", "q4"])
    assert isinstance(r.exception, ClawloopError) and "--type" in str(r.exception)


@pytest.mark.parametrize(("qtype", "most"), [("q4_0", 0.15), ("q5_0", 0.08)])
def test_4_and_5_bit_exports_keep_the_tied_head_at_8_bits(qtype: str, most: float, llama_dir: Path,
                                                          tmp_path: Path) -> None:
    """q4_0/q5_0 quantize the layers and keep token_embd (also the output head) at q8_0, as
    llama.cpp's quantizer keeps its output tensor; every tensor reads back close to the original."""
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    from clawloop.policy.gguf_export import export_gguf

    meta = export_gguf(llama_dir, tmp_path / "m.gguf", qtype=qtype)
    tensors = {t.name: t for t in gguf.GGUFReader(tmp_path / "m.gguf").tensors}
    types = {n: t.tensor_type.name for n, t in tensors.items()}
    assert types["blk.0.attn_q.weight"] == qtype.upper() and types["blk.1.ffn_down.weight"] == qtype.upper()
    assert types["token_embd.weight"] == "Q8_0" and types["output_norm.weight"] == "F32"
    assert meta["bytes"] < export_gguf(llama_dir, tmp_path / "f.gguf", qtype="f32")["bytes"] / 3
    original = load_file(llama_dir / "model.safetensors")
    for hf_name, gguf_name in (("model.layers.0.mlp.down_proj.weight", "blk.0.ffn_down.weight"),
                               ("model.layers.1.self_attn.v_proj.weight", "blk.1.attn_v.weight"),
                               ("model.embed_tokens.weight", "token_embd.weight")):
        t = tensors[gguf_name]
        got = gguf.quants.dequantize(t.data, t.tensor_type).reshape(original[hf_name].shape)
        want = original[hf_name].astype(np.float32)
        rel = float(np.linalg.norm(got - want) / np.linalg.norm(want))
        assert 0 < rel < (most if gguf_name != "token_embd.weight" else 0.01), (gguf_name, rel)


def test_repacking_is_off_only_where_amx_crashed_the_server(tmp_path: Path) -> None:
    from clawloop.policy.llamacpp import extra_buffer_args

    amx, avx2 = tmp_path / "amx", tmp_path / "avx2"
    amx.write_text("flags\t\t: fpu sse2 avx2 avx512f amx_bf16 amx_tile amx_int8\n")
    avx2.write_text("flags\t\t: fpu sse2 avx2 fma\n")
    assert extra_buffer_args(str(amx)) == ["--no-repack"]
    assert extra_buffer_args(str(avx2)) == [] == extra_buffer_args(str(tmp_path / "missing"))
