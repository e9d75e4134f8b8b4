"""SFT: the assistant-only label mask, learning a command, resuming, the checkpoint written."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from clawloop.config.train import SFTParams
from clawloop.core.agent.harness import initial_messages
from clawloop.core.agent.tool_calls import TOOLS, assistant_message, tool_message
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.phases.train import data as tdata

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEST_SH = ('if [ "$(cat /workspace/{f} 2>/dev/null)" = "{v}" ]; then echo 1; else echo 0; fi '
           '> /logs/verifier/reward.txt')




def make_task(name: str, value: str) -> Task:
    return Task(instruction=f"Write {value} into {name}.", skill="files", level=1,
                verifier=Verifier(files={"test.sh": FileSpec(content=TEST_SH.format(f=name, v=value))}),
                solution=Solution(steps=[f"echo {value} > {name}"]))


def conversation(task: Task, *commands: str, outputs: tuple[str, ...] = ()) -> tdata.Conversation:
    msgs = initial_messages(task)
    for i, c in enumerate(commands):
        msgs += [assistant_message(c), tool_message(outputs[i] if i < len(outputs) else "[exit code 0]")]
    return tdata.Conversation(task.id, [*msgs, assistant_message(None)], "reference")


def expected_assistant_mask(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                            ) -> tuple[list[int], list[int]]:
    """Token ids and a 0/1 mask of the tokens inside {% generation %} blocks, computed from the
    text: the markers are swapped for sentinel characters, the spans located, the sentinels
    removed and the text tokenized with offsets."""
    template = re.sub(r"\{%(-?)\s*generation\s*(-?)%\}", r'{{\1 "\\x02" \2}}', tokenizer.chat_template)
    template = re.sub(r"\{%(-?)\s*endgeneration\s*(-?)%\}", r'{{\1 "\\x03" \2}}', template)
    marked = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, chat_template=template)
    spans, clean, start = [], [], None
    for ch in marked:
        if ch == "\x02":
            start = len(clean)
        elif ch == "\x03":
            spans.append((start, len(clean)))
        else:
            clean.append(ch)
    text = "".join(clean)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    mask = [int(any(a <= s and e <= b for a, b in spans)) for s, e in enc["offset_mapping"]]
    return enc["input_ids"], mask


@pytest.mark.parametrize("template", ["chat_template.jinja", "qwen2.5_chat_template.jinja",
                                      "qwen2.5_json_chat_template.jinja"])
def test_a_turn_marked_untrained_renders_the_same_and_carries_no_loss(tiny_model: Path, template: str) -> None:
    """A reference's planned mistake (`"train": false` on its assistant turn) is in the context of what
    follows, character for character, but none of its tokens is trained; every other turn still is."""
    from transformers import AutoTokenizer

    from clawloop.bootstrap.scratch import TEMPLATE

    tok = AutoTokenizer.from_pretrained(tiny_model)
    chat = (TEMPLATE.parent / template).read_text()
    task = make_task("a.txt", "alpha")
    conv = conversation(task, "sort a.txt", "cd /workspace && sort a.txt", outputs=(
        "sort: cannot read: a.txt: No such file or directory\n[exit code 2]", "alpha\n[exit code 0]")).messages
    mistake = next(i for i, m in enumerate(conv) if m["role"] == "assistant")
    marked = [*conv[:mistake], {**conv[mistake], "train": False}, *conv[mistake + 1:]]

    def render(messages: list[dict[str, Any]]) -> tuple[list[int], list[int]]:
        out = tok.apply_chat_template(messages, tools=TOOLS, tokenize=True, return_dict=True, chat_template=chat,
                                      return_assistant_tokens_mask=True)
        return out["input_ids"], out["assistant_masks"]

    (ids, mask), (ids2, mask2) = render(conv), render(marked)
    assert ids == ids2
    trained = tok.decode([t for t, m in zip(ids, mask, strict=True) if m])
    trained2 = tok.decode([t for t, m in zip(ids2, mask2, strict=True) if m])
    assert "cd /workspace && sort a.txt" in trained2 and "sort a.txt" in trained
    assert '"sort a.txt"' in trained and '"sort a.txt"' not in trained2
    assert sum(mask) > sum(mask2) > 0


def test_labels_cover_exactly_the_assistant_tokens(tiny_model: Path, tmp_path: Path) -> None:
    from clawloop.phases.train.sft import build_trainer

    t1, t2 = make_task("a.txt", "alpha"), make_task("b b.txt", "beta")
    convs = [conversation(t1, "ls", "echo alpha > a.txt", outputs=("x\n[exit code 0]",)),
             conversation(t2, "echo beta > 'b b.txt'")]
    trainer = build_trainer(tiny_model, tdata.to_dataset(convs), SFTParams(max_steps=1), tmp_path / "o")
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(2)])
    tok = trainer.processing_class
    for row, conv in enumerate(convs):
        ids, mask = expected_assistant_mask(tok, conv.messages, TOOLS)
        n = len(ids)
        assert batch["input_ids"][row, :n].tolist() == ids
        labels = batch["labels"][row].tolist()
        assert [int(x != -100) for x in labels[:n]] == mask
        assert all(x == -100 for x in labels[n:])  # padding
        assert [x for x in labels if x != -100] == [i for i, m in zip(ids, mask, strict=True) if m]
        # what is trained: the calls and the end of turn, nothing of the prompt or the tool output
        trained = tok.decode([x for x in labels if x != -100])
        assert trained.count("<tool_call>") == sum(m["role"] == "assistant" for m in conv.messages)
        assert trained.count("<|im_end|>") == trained.count("<tool_call>")
        assert "[exit code" not in trained and "Write" not in trained and "<|im_start|>" not in trained


COMMANDS = {
    "mkdir -p build": [f"{v} {o}" for v in ("Create", "Make", "Set up", "Add")
                       for o in ("a directory called build.", "the build directory.", "an empty folder named build.")],
    "echo hello > greeting.txt": [f"{v} {o}" for v in ("Write", "Put", "Save", "Store")
                                  for o in ("hello into greeting.txt.", "the word hello in greeting.txt.",
                                            "hello to the file greeting.txt.")],
}


def greedy_replies(model_dir: Path, conversations: list[list[dict[str, Any]]]) -> list[str]:
    """Greedy replies rendered exactly as the policy renders prompts (chat template + TOOLS)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    out = []
    for conv in conversations:
        enc = tok.apply_chat_template(conv, tools=TOOLS, add_generation_prompt=True, return_tensors="pt",
                                      return_dict=True)
        with torch.inference_mode():
            ids = model.generate(**enc, max_new_tokens=40, do_sample=False)
        out.append(tok.decode(ids[0, enc["input_ids"].shape[1]:], skip_special_tokens=True))
    return out


@pytest.mark.slow
def test_sft_learns_commands_and_writes_a_checkpoint(tiny_model: Path, tmp_path: Path) -> None:
    """24 trajectories (two commands, twelve phrasings each) from scratch; greedy generation on
    held-in tasks then reproduces the trained commands."""
    from clawloop.core.agent.tool_calls import ParsedCall, parse_reply
    from clawloop.phases.train.sft import run_sft

    tasks = [Task(instruction=p, verifier=Verifier(files={"test.sh": FileSpec(content="exit 0")}),
                  solution=Solution(steps=[cmd])) for cmd, phrasings in COMMANDS.items() for p in phrasings]
    convs = [conversation(t, t.solution.steps[0]) for t in tasks]  # type: ignore[union-attr]
    # lr 5e-3 constant, batch 4: loss ~0.05 by step 70, ~0.003 by step 100 (4/4 held-in hits from step
    # 80 in one run, 0/4 at step 80 with another data order): 120 steps leave a margin.
    params = SFTParams(max_steps=120, learning_rate=5e-3, lr_scheduler_type="constant_with_warmup",
                       per_device_train_batch_size=4, warmup_ratio=0.05, logging_steps=10, save_steps=1000)
    dest = tmp_path / "ckpt"
    meta = run_sft(tiny_model, tdata.to_dataset(convs), params, tmp_path / "stage", dest,
                   logs_dir=tmp_path / "logs")
    assert meta["steps"] == 120 and meta["metrics"]["loss"] < 0.05
    assert (dest / "model.safetensors").is_file() and (dest / "tokenizer.json").is_file()
    assert json.loads((dest / "train_meta.json").read_text())["method"] == "sft"
    assert (tmp_path / "logs" / "metrics.json").is_file()  # DVCLive summary
    held_in = tasks[::6]
    replies = greedy_replies(dest, [initial_messages(t) for t in held_in])
    parsed = [parse_reply(r) for r in replies]
    assert all(isinstance(p, ParsedCall) and p.name == "bash" for p in parsed), replies
    hits = [t.solution.steps[0] in r for t, r in zip(held_in, replies, strict=True)]  # type: ignore[union-attr]
    assert sum(hits) >= 2, replies


def test_lora_is_merged_into_a_plain_checkpoint(tiny_model: Path, tmp_path: Path) -> None:
    from safetensors import safe_open

    from clawloop.config.train import LoraParams
    from clawloop.phases.train.sft import run_sft

    t = make_task("a.txt", "alpha")
    params = SFTParams(max_steps=1, per_device_train_batch_size=2, lora=LoraParams(r=4, alpha=8))
    dest = tmp_path / "ckpt"
    meta = run_sft(tiny_model, tdata.to_dataset([conversation(t, "ls"), conversation(t, "pwd")]), params,
                   tmp_path / "stage", dest)
    assert meta["steps"] == 1 and meta["params"]["lora"]["r"] == 4
    assert not (dest / "adapter_config.json").exists()
    with safe_open(str(dest / "model.safetensors"), "pt") as f:
        keys = list(f.keys())
    base_keys = list(safe_open(str(tiny_model / "model.safetensors"), "pt").keys())
    assert sorted(keys) == sorted(base_keys) and not any("lora" in k for k in keys)


def test_trainable_layers_freeze_everything_below_the_top(tiny_model: Path, tmp_path: Path) -> None:
    """sft.trainable_layers: only the top N decoder layers and the final norm move (the
    backward stops there, which is what makes a 135M model affordable on 2 cores)."""
    from safetensors.torch import load_file

    from clawloop.phases.train.sft import run_sft

    t = make_task("a.txt", "alpha")
    params = SFTParams(max_steps=2, per_device_train_batch_size=2, learning_rate=1e-2, trainable_layers=1,
                       save_steps=1000)
    dest = tmp_path / "ckpt"
    run_sft(tiny_model, tdata.to_dataset([conversation(t, "ls"), conversation(t, "pwd")]), params,
            tmp_path / "stage", dest)
    before, after = load_file(str(tiny_model / "model.safetensors")), load_file(str(dest / "model.safetensors"))
    moved = {k for k in before if not (before[k] == after[k]).all()}
    assert moved and all(k.startswith(("model.layers.3.", "model.norm.")) for k in moved), sorted(moved)
    assert any(k.startswith("model.layers.3.") for k in moved)


@pytest.mark.parametrize("train_head", [True, False])
def test_train_head_false_keeps_an_untied_head_as_the_base(tiny_model: Path, tmp_path: Path, train_head: bool) -> None:
    """sft.train_head: with trainable_layers an untied head trains by default; false keeps it
    bit-equal to the base while the top layers still move."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from clawloop.phases.train.sft import run_sft

    base = tmp_path / "untied"
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model))
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone())
    model.save_pretrained(str(base))
    for f in tiny_model.iterdir():
        if f.is_file() and not (base / f.name).exists():
            (base / f.name).write_bytes(f.read_bytes())
    t = make_task("a.txt", "alpha")
    params = SFTParams(max_steps=2, per_device_train_batch_size=2, learning_rate=1e-2, trainable_layers=1,
                       save_steps=1000, train_head=train_head)
    dest = tmp_path / "ckpt"
    run_sft(base, tdata.to_dataset([conversation(t, "ls"), conversation(t, "pwd")]), params, tmp_path / "stage", dest)
    before, after = load_file(str(base / "model.safetensors")), load_file(str(dest / "model.safetensors"))
    moved = {k for k in before if not torch.equal(before[k].float(), after[k].float())}
    assert any(k.startswith("model.layers.3.") for k in moved)
    assert ("lm_head.weight" in moved) is train_head, sorted(moved)


def test_interpolate_puts_trained_weights_part_way_back_to_the_start(tiny_model: Path, tmp_path: Path) -> None:
    """sft.interpolate (WiSE-FT): with 0.5 every trained weight lands half way between the start and
    what the same run trains to with 1.0; frozen weights stay the start's."""
    import torch
    from safetensors.torch import load_file

    from clawloop.phases.train.sft import run_sft

    t = make_task("a.txt", "alpha")
    data = tdata.to_dataset([conversation(t, "ls"), conversation(t, "pwd")])
    after = {}
    for alpha in (1.0, 0.5):
        params = SFTParams(max_steps=2, per_device_train_batch_size=2, learning_rate=1e-2, trainable_layers=1,
                           save_steps=1000, interpolate=alpha)
        dest = tmp_path / f"ckpt-{alpha}"
        meta = run_sft(tiny_model, data, params, tmp_path / f"stage-{alpha}", dest)
        assert meta["params"]["interpolate"] == alpha
        after[alpha] = load_file(str(dest / "model.safetensors"))
    start = load_file(str(tiny_model / "model.safetensors"))
    moved = [k for k in start if not torch.equal(start[k].float(), after[1.0][k].float())]
    assert moved and all(k.startswith(("model.layers.3.", "model.norm.")) for k in moved), moved
    for k in start:
        half = start[k].float() + 0.5 * (after[1.0][k].float() - start[k].float())
        assert torch.allclose(after[0.5][k].float(), half, atol=1e-6), k


def test_interpolate_refuses_lora() -> None:
    from clawloop.config.train import LoraParams

    with pytest.raises(ValueError, match="interpolate < 1 needs trained weights"):
        SFTParams(interpolate=0.5, lora=LoraParams())


def test_train_head_false_needs_trainable_layers() -> None:
    with pytest.raises(ValueError, match="train_head: false needs trainable_layers"):
        SFTParams(train_head=False)


def test_frozen_weights_keep_the_base_dtype_on_disk(tiny_model: Path, tmp_path: Path) -> None:
    """A base stored in bf16 (as the Qwen bootstrap writes it): the weights SFT froze are saved
    back in bf16, bit-equal to the base, the trained ones in fp32, and the checkpoint loads."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    from clawloop.artifacts.checkpoint import stored_dtypes
    from clawloop.phases.train.sft import run_sft

    base = tmp_path / "bf16-base"
    shutil.copytree(tiny_model, base)
    weights = load_file(str(base / "model.safetensors"))
    save_file({k: v.to(torch.bfloat16) for k, v in weights.items()}, str(base / "model.safetensors"),
              metadata={"format": "pt"})
    t = make_task("a.txt", "alpha")
    params = SFTParams(max_steps=2, per_device_train_batch_size=2, learning_rate=1e-2, trainable_layers=1,
                       save_steps=1000)
    dest = tmp_path / "ckpt"
    run_sft(base, tdata.to_dataset([conversation(t, "ls"), conversation(t, "pwd")]), params, tmp_path / "stage", dest)
    dtypes, before, after = stored_dtypes(dest), load_file(str(base / "model.safetensors")), \
        load_file(str(dest / "model.safetensors"))
    trained = {k for k in dtypes if k.startswith(("model.layers.3.", "model.norm.", "lm_head."))}  # head: untied
    assert trained and all(dtypes[k] == "F32" for k in trained)
    frozen = set(dtypes) - trained
    bad = sorted(k for k in frozen if not (dtypes[k] == "BF16" and torch.equal(before[k], after[k])))
    assert frozen and not bad, [(k, dtypes[k]) for k in bad]
    assert greedy_replies(dest, [initial_messages(t)])  # loads (mixed dtypes upcast) and generates
