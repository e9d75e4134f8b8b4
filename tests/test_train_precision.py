"""Training precision (`train.sft.precision` / `train.grpo.precision`): bf16 autocast with float32
master weights where the CPU has native bf16 (clawloop.config.cpu.native_bf16), float32 elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_sft import conversation, make_task

from clawloop.config import cpu
from clawloop.config.train import GRPOParams, SFTParams, TrainParams, field_help, resolve_bf16
from clawloop.errors import ClawloopError
from clawloop.phases.train import data as tdata

ZEN4 = "flags\t\t: fpu sse2 avx2 avx512f avx512bw avx512vl avx512_bf16 avx512_vnni\n"
CASCADE_LAKE = "flags\t\t: fpu sse2 avx2 avx512f avx512dq avx512bw avx512vl avx512_vnni\n"  # AVX-512, no bf16
SAPPHIRE_RAPIDS = "flags\t\t: fpu sse2 avx2 avx512f amx_bf16 amx_tile amx_int8\n"
AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu sse2 avx avx2 fma\n"


@pytest.mark.parametrize(("flags", "native"), [(ZEN4, True), (SAPPHIRE_RAPIDS, True), (CASCADE_LAKE, False),
                                               (AVX2, False), ("Features\t: fp asimd bf16\n", False)],
                         ids=["avx512_bf16", "amx_bf16", "avx512-without-bf16", "avx2", "arm"])
def test_native_bf16_follows_the_cpu_flags(tmp_path: Path, flags: str, native: bool) -> None:
    """Only the bf16 dot-product instructions count: oneDNN's own check also says yes on AVX-512
    without them (where bf16 is emulated)."""
    f = tmp_path / "cpuinfo"
    f.write_text(flags)
    assert cpu.native_bf16(f) is native
    assert cpu.native_bf16(tmp_path / "missing") is False  # unreadable: assume emulated


def test_precision_is_a_config_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    assert SFTParams().precision == "auto" and GRPOParams().precision == "auto"
    p = TrainParams.from_mapping({"sft": {"precision": "bfloat16"}, "grpo": {"precision": "float32"}})
    assert p.sft.precision == "bfloat16" and p.grpo.precision == "float32"
    with pytest.raises(ClawloopError, match=r"sft.precision"):
        TrainParams.from_mapping({"sft": {"precision": "fp16"}})
    with pytest.raises(ClawloopError, match=r"bf16: replaced by precision"):
        TrainParams.from_mapping({"sft": {"bf16": True}})
    assert any(n == "sft.precision" and "autocast" in h for n, _, h in field_help(p))

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_bf16("bfloat16") and not resolve_bf16("float32")
    for native in (True, False):
        monkeypatch.setattr(cpu, "native_bf16", lambda native=native: native)
        assert resolve_bf16("auto") is native


def test_trainer_arguments_follow_the_precision(tmp_path: Path) -> None:
    """SFT and GRPO alike: bfloat16 asks accelerate for bf16 mixed precision (CPU autocast) and
    loads the weights in float32; float32 asks for none."""
    import torch

    from clawloop.phases.train.grpo import grpo_config
    from clawloop.phases.train.sft import sft_config

    a = sft_config(SFTParams(precision="bfloat16"), tmp_path / "a")
    assert a.bf16 and a.mixed_precision == "bf16" and a.use_cpu and a.model_init_kwargs == {"dtype": torch.float32}
    b = sft_config(SFTParams(precision="float32"), tmp_path / "b")
    assert not b.bf16 and b.mixed_precision == "no"
    g = grpo_config(GRPOParams(precision="bfloat16"), tmp_path / "g")
    assert g.bf16 and g.model_init_kwargs == {"dtype": torch.float32}


def _tiny_sft(tiny_model: Path, out: Path, precision: str, **over: Any) -> tuple[Any, list[Any], dict[str, Any]]:
    """Two SFT steps of the tiny model in `precision`, with a hook on a trained layer's MLP: the
    trainer, the dtypes of that layer's matmul outputs, and the trained weights before training."""
    import torch

    from clawloop.phases.train.sft import build_trainer, trainable_weights

    tasks = [make_task(f"f{i}.txt", "v" * (i + 1)) for i in range(4)]
    ds = tdata.to_dataset([conversation(t, *(["ls"] * (i + 1))) for i, t in enumerate(tasks)])
    params = SFTParams(max_steps=2, per_device_train_batch_size=2, learning_rate=1e-3, logging_steps=1,
                       save_steps=1000, warmup_ratio=0.0, precision=precision, **over)
    tr = build_trainer(tiny_model, ds, params, out)
    seen: list[Any] = []
    top = tr.model.model.layers[-1].mlp.down_proj
    top.register_forward_hook(lambda m, i, o: seen.append((o.dtype, torch.is_autocast_enabled("cpu"))))
    start = trainable_weights(tr.model)
    tr.train()
    return tr, seen, start


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("over", [{}, {"trainable_layers": 2}], ids=["all-layers", "frozen-trunk"])
def test_sft_step_runs_in_bf16_autocast_with_float32_master_weights(tiny_model: Path, tmp_path: Path,
                                                                    over: dict[str, Any]) -> None:
    """precision bfloat16: the matmuls of a training step run in bf16 under CPU autocast, while the
    weights (trained and frozen), their gradients and AdamW's state stay float32 and do move;
    float32: no autocast anywhere. On TRL's path and on the frozen-trunk path alike."""
    import torch

    tr, seen, start = _tiny_sft(tiny_model, tmp_path / "bf16", "bfloat16", **over)
    assert (tr.frozen_trunk is not None) == ("trainable_layers" in over)
    assert seen and all(dtype == torch.bfloat16 and on for dtype, on in seen)
    assert {p.dtype for p in tr.model.parameters()} == {torch.float32}
    state = [s for s in tr.optimizer.state.values() if "exp_avg" in s]
    assert state and all(s["exp_avg"].dtype == s["exp_avg_sq"].dtype == torch.float32 for s in state)
    moved = [n for n, p in tr.model.named_parameters() if n in start and not torch.equal(p, start[n])]
    assert len(moved) == len(start)  # float32 master weights take every update, however small
    assert all(h["loss"] == h["loss"] for h in tr.state.log_history if "loss" in h)  # not NaN

    tr, seen, _ = _tiny_sft(tiny_model, tmp_path / "fp32", "float32", **over)
    assert seen and all(dtype == torch.float32 and not on for dtype, on in seen)


@pytest.mark.usefixtures("one_torch_thread")
def test_the_stage_records_its_precision(tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """train_meta.json says what the setting resolved to and what the CPU has; one line says it too."""
    from clawloop.phases.train.sft import run_sft

    t = make_task("a.txt", "alpha")
    params = SFTParams(max_steps=1, per_device_train_batch_size=2, save_steps=1000, precision="bfloat16")
    meta = run_sft(tiny_model, tdata.to_dataset([conversation(t, "ls"), conversation(t, "pwd")]), params,
                   tmp_path / "stage", tmp_path / "out")
    assert meta["precision"] == {"setting": "bfloat16", "bf16_autocast": True, "weights": "float32",
                                 "cpu_native_bf16": cpu.native_bf16()}
    assert "[sft] precision bfloat16: bf16 autocast, float32 weights" in capsys.readouterr().out
