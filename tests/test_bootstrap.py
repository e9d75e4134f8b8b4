"""The from-scratch model: `clawloop model init`, tokenizer, chat template, end-to-end rollout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from clawloop.bootstrap.scratch import SPLIT_PATTERN, measure_tokenizer, train_tokenizer
from clawloop.commands import app
from clawloop.core.agent.harness import HarnessConfig
from clawloop.core.agent.tool_calls import TOOLS, assistant_message, parse_reply, tool_message
from clawloop.core.tasks.task import FileSpec, Task, Verifier

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import clawloop.commands.model_cmd  # noqa: F401  (registers `model init`)

    out = tmp_path_factory.mktemp("tiny") / "policy"
    r = runner.invoke(app, ["model", "init", "--size", "tiny", "--out", str(out), "--seed", "0"])
    assert r.exit_code == 0, r.output
    assert "parameters" in r.output and "copy-consistent 100%" in r.output
    return out


def test_model_dir_loads_with_auto_classes(tiny: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny)
    model = AutoModelForCausalLM.from_pretrained(tiny)
    cfg = model.config
    assert type(model).__name__ == "Qwen3ForCausalLM" and cfg.head_dim * cfg.num_attention_heads == cfg.hidden_size
    assert (cfg.hidden_size, cfg.num_hidden_layers) == (256, 4)
    n = sum(p.numel() for p in model.parameters())
    assert 3_000_000 <= n <= 5_000_000
    assert len(tok) == cfg.vocab_size == 2048
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    meta = json.loads((tiny / "model_meta.json").read_text())
    assert meta["params"] == n and meta["size"] == "tiny" and meta["seed"] == 0
    assert meta["tokenizer"]["scheme"] == "split" and meta["tokenizer"]["copy_consistent"] == 1.0


def test_bootstrap_is_deterministic(tmp_path: Path) -> None:
    from clawloop.bootstrap.scratch import bootstrap

    a = bootstrap(tmp_path / "a", size="tiny", seed=5, corpus_pairs=1000)
    b = bootstrap(tmp_path / "b", size="tiny", seed=5, corpus_pairs=1000)
    c = bootstrap(tmp_path / "c", size="tiny", seed=6, corpus_pairs=1000)
    assert a["digest"] == b["digest"] != c["digest"]
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


def test_tokenizer_keeps_names_whole_and_copyable(tiny: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny)
    name = tok.tokenize("amber_ledger_2024.csv")
    assert name[-6:] == ["2", "0", "2", "4", ".", "csv"]  # digits and marks are single tokens
    for context in ("cat '{}' > out/x", '{{"command": "head {}"}}', "see data/{}.", "file {} now"):
        toks = tok.tokenize(context.format("amber_ledger_2024.csv"))
        assert any(toks[i:i + len(name)] == name for i in range(len(toks))), context
    for name in ("naïve café.txt", "数据.json", "x\u200by"):  # unseen scripts fall back to bytes
        assert tok.decode(tok(name)["input_ids"]) == name
    ids = tok("<tool_call><tool_response><|im_start|><|im_end|>")["input_ids"]
    assert len(ids) == 4
    assert tok.decode(ids, skip_special_tokens=True) == "<tool_call><tool_response>"


def test_split_scheme_measured_better_for_copying() -> None:
    from clawloop.bootstrap.corpus import corpus

    texts = list(corpus(0, n_pairs=3000, n_chats=300))
    split = measure_tokenizer(train_tokenizer("split", 1024, texts=texts), n=300)
    byte = measure_tokenizer(train_tokenizer("bytelevel", 1024, texts=texts), n=300)
    assert split["copy_consistent"] == 1.0 > byte["copy_consistent"]
    assert byte["chars_per_token"] > split["chars_per_token"] > 2.0
    assert SPLIT_PATTERN


def test_chat_template_renders_tools_calls_and_generation_markers(tiny: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny)
    msgs = [{"role": "system", "content": "SYS"}, {"role": "user", "content": "Copy 'a b.txt'."},
            assistant_message("cp 'a b.txt' c.txt", "Copying."), tool_message("[exit code 0]"),
            assistant_message(None)]
    text = tok.apply_chat_template(msgs, tools=TOOLS, tokenize=False)
    assert text.startswith("<|im_start|>system\nSYS\n\n# Tools\n") and '"name": "bash"' in text
    assert ('<|im_start|>assistant\nCopying.\n<tool_call>\n{"name": "bash", "arguments": '
            '{"command": "cp \'a b.txt\' c.txt"}}\n</tool_call><|im_end|>\n') in text
    assert "<|im_start|>user\n<tool_response>\n[exit code 0]\n</tool_response><|im_end|>\n" in text
    assert text.endswith('<|im_start|>assistant\n<tool_call>\n{"name": "submit", "arguments": {}}\n'
                         "</tool_call><|im_end|>\n")
    # assistant-only loss: the mask covers exactly the two replies, end-of-turn tokens included
    enc = tok.apply_chat_template(msgs, tools=TOOLS, tokenize=True, return_dict=True,
                                  return_assistant_tokens_mask=True)
    masked = tok.decode([i for i, m in zip(enc["input_ids"], enc["assistant_masks"], strict=True) if m])
    first = parse_reply(masked.split("<|im_end|>")[0])
    assert first.command == "cp 'a b.txt' c.txt" and masked.count("<|im_end|>") == 2
    # prefix-preserving (multi-turn GRPO): the prompt of turn n is a prefix of turn n+1
    prompt = tok.apply_chat_template(msgs[:2], tools=TOOLS, tokenize=False, add_generation_prompt=True)
    assert text.startswith(prompt)
    # transformers/TRL parse a generated reply into tool calls with the saved response template
    reply = tok('<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call><|im_end|>',
                add_special_tokens=False)["input_ids"]
    parsed = tok.parse_response(reply, prefix=tok(prompt, add_special_tokens=False)["input_ids"])
    assert parsed["tool_calls"][0]["function"] == {"name": "bash", "arguments": {"command": "ls"}}


def test_model_init_bad_input(tmp_path: Path) -> None:
    import clawloop.commands.model_cmd  # noqa: F401
    from clawloop.errors import ClawloopError

    r = runner.invoke(app, ["model", "init", "--size", "huge", "--out", str(tmp_path / "x")])
    assert isinstance(r.exception, ClawloopError) and "--size" in str(r.exception)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    r = runner.invoke(app, ["model", "init", "--out", str(tmp_path / "full")])
    assert isinstance(r.exception, ClawloopError) and "not empty" in str(r.exception)


TEST_SH = 'if [ -f /workspace/{f} ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'


def test_tiny_model_end_to_end_rollout(tiny: Path, tmp_path: Path) -> None:
    """init → HFPolicy → lockstep rollout of 2 tasks × 2 samples on bwrap → Parquet."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
    from clawloop.core.trajectory import OUTCOMES
    from clawloop.policy.load import load_policy
    from clawloop.policy.types import SamplingParams

    policy = load_policy({"backend": "hf", "model": str(tiny)})
    tasks = [Task(instruction=f"Create {f}.", verifier=Verifier(files={"test.sh": FileSpec(
        content=TEST_SH.format(f=f))})) for f in ("a.txt", "b.txt")]
    config = RolloutConfig(k=2, batch_size=4, backend="bwrap", harness=HarnessConfig(max_turns=3),
                           sampling=SamplingParams(temperature=1.0, max_new_tokens=24, seed=0))
    res = run_rollouts(tasks, policy, config, out_dir=tmp_path, progress=False)
    assert len(res) == 4 and all(r.outcome in OUTCOMES and r.outcome != "error" for r in res)
    assert all(1 <= r.n_turns <= 3 and r.completion_tokens > 0 for r in res)
    eps = pq.read_table(next(tmp_path.glob("episodes-*.parquet"))).to_pylist()
    assert {e["policy_id"] for e in eps} == {"policy"}
    steps = pq.read_table(next(tmp_path.glob("steps-*.parquet"))).to_pylist()
    assert len(steps) == sum(e["n_turns"] for e in eps)
    assert all(0 < s["tokens"] <= 24 for s in steps)
    first: dict[str, Any] = json.loads(eps[0]["messages"])[2]
    assert first["role"] == "assistant"
