"""Frozen-trunk SFT (clawloop/phases/train/frozen_trunk.py): the same loss, gradients and metrics as TRL's
path, the trunk run once per conversation, TRL's path where it does not apply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_sft import conversation, make_task

from clawloop.config.train import LoraParams, SFTParams
from clawloop.phases.train import data as tdata

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def dataset(n: int = 4) -> Any:
    """Conversations of different lengths, so batches are padded."""
    tasks = [make_task(f"f{i}.txt", "v" * (i + 1)) for i in range(n)]
    return tdata.to_dataset([conversation(t, *(["ls"] * (i + 1))) for i, t in enumerate(tasks)])


def params(**over: Any) -> SFTParams:
    return SFTParams(**{"max_steps": 4, "per_device_train_batch_size": 2, "learning_rate": 1e-3,
                        "trainable_layers": 2, "logging_steps": 1, "save_steps": 1000, "warmup_ratio": 0.0, **over})


def trainer(base: Path, out: Path, **over: Any) -> Any:
    from clawloop.phases.train.sft import build_trainer

    return build_trainer(base, dataset(), params(**over), out)


def untied(base: Path, out: Path) -> Path:
    """`base` with its own output head (as Qwen2.5-0.5B's checkpoint here has), saved to `out`."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base))
    head = model.get_input_embeddings().weight.detach().clone()
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(head + 0.01 * torch.randn_like(head))
    model.save_pretrained(str(out))
    for f in base.iterdir():
        if f.name.startswith(("tokenizer", "special_tokens", "chat_template")):
            shutil.copy(f, out / f.name)
    return out


@pytest.mark.parametrize(("checkpointing", "lora"), [(False, False), (True, False), (False, True)],
                         ids=["plain", "checkpointing", "lora"])
def test_one_batch_has_the_same_loss_gradients_and_metrics(tiny_model: Path, tmp_path: Path,
                                                         checkpointing: bool, lora: bool) -> None:
    """Every padded batch of an epoch through both forwards of one model: loss, per-token log-probs,
    entropy, top-1 and every trainable weight's gradient agree (with LoRA: the adapters' of the top
    layers, the peft model calling the base model's forward)."""
    import torch

    over: dict[str, Any] = {"lora": LoraParams(r=4, alpha=8, dropout=0.0)} if lora else {}
    tr = trainer(tiny_model, tmp_path / "o", gradient_checkpointing=checkpointing, **over)
    model, trunk = tr.model, tr.frozen_trunk
    assert trunk is not None and trunk.first == 2
    trained = [n for n, p in model.named_parameters() if p.requires_grad]
    assert not lora or (trained and all("lora_" in n and (".layers.2." in n or ".layers.3." in n) for n in trained))
    if checkpointing:  # what Trainer.train does with activation_checkpointing
        model.activation_checkpointing_enable()
    model.train()
    batches = list(tr.get_train_dataloader())
    assert any(not b["attention_mask"].all() for b in batches)  # padded rows
    for batch in batches:
        got = {}
        for enabled in (True, False):
            trunk.enabled = enabled
            model.zero_grad()
            out = model(**batch, use_cache=False, fused_lm_head=True)
            out.loss.backward()
            got[enabled] = out, {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        (fast, fast_grads), (slow, slow_grads) = got[True], got[False]
        torch.testing.assert_close(fast.loss, slow.loss, rtol=1e-5, atol=0)
        for field in ("log_probs", "entropy"):
            torch.testing.assert_close(getattr(fast, field), getattr(slow, field), rtol=1e-5, atol=1e-5)
        assert torch.equal(fast.is_top1, slow.is_top1) and torch.equal(fast.label_mask, slow.label_mask)
        assert set(fast_grads) == set(slow_grads) and any("model.layers.3." in n for n in slow_grads)
        for name, g in slow_grads.items():
            torch.testing.assert_close(fast_grads[name], g, rtol=1e-4, atol=1e-6 * float(g.abs().max()), msg=name)
    assert trunk.stats.fast_calls == len(batches) and trunk.stats.trunk_rows == 4


@pytest.mark.parametrize("head", ["tied", "untied"])
def test_training_matches_trls_path_and_runs_the_trunk_once_per_conversation(tiny_model: Path, tmp_path: Path,
                                                                             head: str) -> None:
    """4 conversations, batch 2, 4 steps (two epochs) each way: the per-step loss and metrics agree,
    the updated weights agree (AdamW amplifies float rounding in near-zero gradients, hence a
    tolerance on the update), and the trunk ran once per conversation, not once per step."""
    import torch

    base = tiny_model if head == "tied" else untied(tiny_model, tmp_path / "untied")
    runs = {}
    for mode in ("off", "auto"):
        tr = trainer(base, tmp_path / mode, frozen_trunk=mode)
        assert (tr.frozen_trunk is None) == (mode == "off")
        before = {n: p.detach().clone() for n, p in tr.model.named_parameters() if p.requires_grad}
        tr.train()
        logs = [h for h in tr.state.log_history if "loss" in h]
        after = {n: p.detach().clone() for n, p in tr.model.named_parameters() if p.requires_grad}
        runs[mode] = logs, before, after, tr.frozen_trunk
    (slow_logs, before, slow, _), (fast_logs, _, fast, trunk) = runs["off"], runs["auto"]
    assert head == "tied" or "lm_head.weight" in slow  # an untied head trains
    assert len(slow_logs) == len(fast_logs) == 4
    for s, f in zip(slow_logs, fast_logs, strict=True):
        assert f["loss"] == pytest.approx(s["loss"], rel=1e-4)
        assert f["mean_token_accuracy"] == pytest.approx(s["mean_token_accuracy"], abs=1e-6)
        assert f["entropy"] == pytest.approx(s["entropy"], rel=1e-4)
        assert f["num_tokens"] == s["num_tokens"]
    update = sum(float(((slow[n] - before[n]) ** 2).sum()) for n in slow) ** 0.5
    diff = sum(float(((slow[n] - fast[n]) ** 2).sum()) for n in slow) ** 0.5
    assert update > 0 and diff / update < 1e-2, (diff, update)
    assert max(float((slow[n] - fast[n]).abs().max()) for n in slow) < 4 * 1e-3  # a few lr at most
    assert trunk.stats.fast_calls == 4 and trunk.stats.fallback_calls == 0
    assert trunk.stats.trunk_rows == 4 and len(trunk.cache) == 4  # 8 rows trained, 4 trunk passes over rows
    assert all(torch.is_tensor(h) and h.shape[-1] == 256 for h in trunk.cache.values())


def test_run_sft_saves_the_real_model_and_records_the_fast_path(tiny_model: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from clawloop.phases.train.sft import run_sft

    dest = tmp_path / "ckpt"
    meta = run_sft(tiny_model, dataset(), params(max_steps=2, learning_rate=1e-2), tmp_path / "stage", dest)
    assert meta["frozen_trunk"]["fast_calls"] == 2 and meta["frozen_trunk"]["trunk_rows"] == 4
    before, after = load_file(str(tiny_model / "model.safetensors")), load_file(str(dest / "model.safetensors"))
    assert sorted(before) == sorted(after)
    moved = {k for k in before if not (before[k] == after[k]).all()}
    assert moved and all(k.startswith(("model.layers.2.", "model.layers.3.", "model.norm.")) for k in moved)


def test_lora_on_the_top_layers_trains_from_the_trunk_and_merges_there(tiny_model: Path, tmp_path: Path) -> None:
    """lora + trainable_layers: adapters on the top layers only, served by the frozen trunk, merged
    into a plain checkpoint in which only those layers' linear weights moved."""
    from safetensors.torch import load_file

    from clawloop.phases.train.sft import run_sft

    dest = tmp_path / "ckpt"
    meta = run_sft(tiny_model, dataset(), params(max_steps=2, learning_rate=1e-2, lora=LoraParams(r=4, alpha=8)),
                   tmp_path / "stage", dest)
    assert meta["frozen_trunk"]["fast_calls"] == 2 and meta["frozen_trunk"]["trunk_rows"] == 4
    before, after = load_file(str(tiny_model / "model.safetensors")), load_file(str(dest / "model.safetensors"))
    assert sorted(before) == sorted(after)
    moved = {k for k in before if not (before[k] == after[k]).all()}
    assert moved and all(k.startswith(("model.layers.2.", "model.layers.3.")) and k.endswith("proj.weight")
                         for k in moved)


@pytest.mark.parametrize("over", [{"lora": LoraParams(r=4, alpha=8), "trainable_layers": None}, {"trainable_layers": None},
                                  {"frozen_trunk": "off"}, {"packing": True}],
                         ids=["lora", "all-layers", "off", "packing"])
def test_trls_path_where_it_does_not_apply(tiny_model: Path, tmp_path: Path, over: dict[str, Any]) -> None:
    tr = trainer(tiny_model, tmp_path / "o", **over)
    assert tr.frozen_trunk is None
    assert not tr.model.forward.__code__.co_filename.endswith("frozen_trunk.py")


def test_a_batch_it_cannot_serve_goes_to_trls_forward(tiny_model: Path, tmp_path: Path) -> None:
    """Eval mode, a left-padded batch, position_ids: TRL's forward answers (and says so in the stats)."""
    import torch

    tr = trainer(tiny_model, tmp_path / "o")
    model, trunk = tr.model, tr.frozen_trunk
    batch = next(iter(tr.get_train_dataloader()))
    model.eval()
    with torch.no_grad():
        ref = model(**batch, fused_lm_head=True).loss
    model.train()
    left = {k: v.flip(1) for k, v in batch.items()}
    assert trunk.lengths(left["attention_mask"]) is None
    model(**left, fused_lm_head=True)
    n = batch["input_ids"].shape[1]
    model(**batch, position_ids=torch.arange(n)[None].expand_as(batch["input_ids"]), fused_lm_head=True)
    assert trunk.stats.fast_calls == 0 and trunk.stats.fallback_calls == 3 and trunk.stats.trunk_rows == 0
    fast = model(**batch, fused_lm_head=True).loss
    torch.testing.assert_close(fast, ref, rtol=1e-5, atol=0)
    assert trunk.stats.fast_calls == 1
    plain = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])  # no fused head: logits
    assert plain.logits.shape[-1] == model.config.vocab_size
