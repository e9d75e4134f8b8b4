"""How far training moved the policy (#76): KL(trained || start) per assistant token on what it
trained on (clawloop.phases.train.drift), in train.json and `clawloop model kl`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_sft import conversation  # tests/ is on sys.path (rootdir conftest, no package)
from test_training_run import make_task
from typer.testing import CliRunner

from clawloop.cli import app
from clawloop.config.params import Params
from clawloop.config.train import SFTParams
from clawloop.core.agent.tool_calls import TOOLS
from clawloop.phases.train import data as tdata
from clawloop.phases.train.drift import measure
from clawloop.phases.train.replay import write_conversations

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def convs() -> list[tdata.Conversation]:
    return [conversation(make_task("a.txt", "alpha"), "ls", "echo alpha > a.txt", outputs=("x\n[exit code 0]",)),
            conversation(make_task("b.txt", "beta"), "echo beta > b.txt"),
            conversation(make_task("c.txt", "gamma"), "cat c.txt", outputs=("gamma\n[exit code 0]",))]


@pytest.fixture(scope="module")
def trained(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model after 2 SFT steps on `convs()` (which it carries, as the loop's checkpoints do)."""
    from clawloop.phases.train.sft import run_sft

    d = tmp_path_factory.mktemp("drift")
    params = SFTParams(max_steps=2, learning_rate=5e-3, per_device_train_batch_size=2, logging_steps=1)
    run_sft(tiny_model, tdata.to_dataset(convs()), params, d / "stage", d / "ckpt")
    write_conversations(d / "ckpt", convs())
    return d / "ckpt"


def test_a_checkpoint_is_at_zero_kl_from_itself(tiny_model: Path) -> None:
    d = measure(tiny_model, tiny_model, convs())
    assert abs(d.kl) < 1e-6 and all(abs(c.kl) < 1e-6 for c in d.conversations)
    assert d.tokens == sum(c.tokens for c in d.conversations) > 0 and len(d.conversations) == 3


def by_hand(new_dir: Path, ref_dir: Path, messages: list[dict[str, Any]]) -> tuple[float, int, float]:
    """(mean KL over the positions predicting an assistant token, their count, mean KL over every
    position): the full-vocabulary log_softmax of both models' whole forward."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(ref_dir)
    enc = tok.apply_chat_template(messages, tools=TOOLS, tokenize=True, return_dict=True,
                                  return_assistant_tokens_mask=True)
    ids = torch.tensor([enc["input_ids"]])
    with torch.no_grad():
        lp_new, lp_ref = (torch.log_softmax(AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32)(ids).logits[0]
                                            .float(), dim=-1) for d in (new_dir, ref_dir))
    kl = (lp_new.exp() * (lp_new - lp_ref)).sum(-1)[:-1]  # position t predicts token t + 1
    assistant = torch.tensor(enc["assistant_masks"][1:], dtype=torch.bool)
    return kl[assistant].mean().item(), int(assistant.sum()), kl.mean().item()


def test_a_trained_checkpoint_moved_and_only_assistant_tokens_count(tiny_model: Path, trained: Path) -> None:
    one = convs()[0]
    got = measure(trained, tiny_model, [one])
    want, tokens, every_position = by_hand(trained, tiny_model, tdata.to_dataset([one])[0]["messages"])
    assert got.kl > 1e-4
    assert got.tokens == tokens and got.conversations[0].tokens == tokens
    assert got.kl == pytest.approx(want, rel=1e-4, abs=1e-7)
    assert got.kl != pytest.approx(every_position, rel=1e-2)  # counting the prompt's tokens would give this


def test_the_train_stage_records_the_kl_when_the_knob_is_on(tiny_model: Path, trained: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from clawloop.phases.train import train as stage

    def fake_weights(job: Any, options: Any, setup: Any) -> dict[str, Any]:  # training itself is tested elsewhere
        shutil.copytree(trained, job.out)
        return {"method": "sft", "steps": 2}

    monkeypatch.setattr(stage, "train_weights", fake_weights)
    validated = tmp_path / "validated"
    validated.mkdir()
    for name in ("valid.jsonl", "probe.jsonl"):
        (validated / name).write_text("")
    results = {}
    for n in (2, 0):
        params = Params()
        params.train.drift.conversations = n
        out = tmp_path / f"iter-{n}" / "checkpoint"
        out.parent.mkdir()
        stage.train_iteration(params, iteration=1, validated=validated, policy=tiny_model, out=out)
        results[n] = orjson.loads((out.parent / "train.json").read_bytes())
    on, off = results[2], results[0]
    assert on["kl_to_start"] > 0 and on["kl_to_start_conversations"] == 2 and on["kl_to_start_s"] >= 0
    assert len(on["kl_to_start_per_conversation"]) == 2 and on["kl_to_start_tokens"] > 0
    assert not any(k.startswith("kl_to_start") for k in off)


def test_nothing_trained_is_not_measured_and_says_why(tiny_model: Path, tmp_path: Path) -> None:
    from clawloop.config.params import DriftParams
    from clawloop.phases.train.drift import after_training

    got = after_training(DriftParams(), tiny_model, tiny_model, {"steps": 0}, tools=None, max_length=1024)
    assert got == {"kl_to_start_skipped": "no weights trained (the checkpoint is the start)"}
    assert after_training(DriftParams(conversations=0), tiny_model, tiny_model, {"steps": 3}, tools=None,
                          max_length=1024) == {}


def test_model_kl_prints_json(tiny_model: Path, trained: Path) -> None:
    got = CliRunner().invoke(app, ["model", "kl", "--checkpoint", str(trained), "--reference", str(tiny_model),
                                   "--conversations", str(trained), "--max", "2", "--json"])
    assert got.exit_code == 0, got.output
    result = orjson.loads(got.stdout.strip().splitlines()[-1])
    assert result["kl"] > 0 and len(result["conversations"]) == 2


@pytest.mark.parametrize("case", ["no checkpoint", "no conversations file", "bad line", "empty"])
def test_model_kl_bad_input_is_one_line(case: str, tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from clawloop.cli import main

    good = tmp_path / "c.jsonl"
    write_conversations(tmp_path, convs())
    shutil.move(tmp_path / "sft_conversations.jsonl", good)
    args = {"--checkpoint": str(tiny_model), "--reference": str(tiny_model), "--conversations": str(good)}
    if case == "no checkpoint":
        args["--checkpoint"] = str(tmp_path / "nowhere")
    elif case == "no conversations file":
        args["--conversations"] = str(tmp_path / "missing.jsonl")
    elif case == "bad line":
        good.write_text('{"task_id": "t", "messages": []}\n')
    elif case == "empty":
        good.write_text("")
    monkeypatch.setattr("sys.argv", ["clawloop", "model", "kl", *(x for kv in args.items() for x in kv)])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1, err


def test_the_report_shows_the_kl_of_each_iteration_that_measured_it(tmp_path: Path) -> None:
    from clawloop.report.collect import collect
    from clawloop.report.render import context, render

    for i in (0, 1, 2):
        (tmp_path / f"iter-{i}").mkdir()
    per = [{"task_id": "a", "tokens": 400, "kl": 0.01}, {"task_id": "b", "tokens": 500, "kl": 0.03}]
    (tmp_path / "iter-1" / "train.json").write_bytes(orjson.dumps(
        {"steps": 2, "kl_to_start": 0.0211, "kl_to_start_tokens": 900, "kl_to_start_per_conversation": per}))
    (tmp_path / "iter-2" / "train.json").write_bytes(orjson.dumps({"steps": 0, "kl_to_start_skipped": "no weights"}))
    html, md = render(context(collect(tmp_path), {}, viewer=None, ablations=[]))
    assert "| 1 | 0.0211 | 0.02 / 0.03 | 900 | 2 |" in md and "\n| 2 |" not in md.split("## KL to the starting policy")[1]
    assert "KL to the starting policy</h2>" in html
