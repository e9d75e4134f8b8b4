"""`train(job, ...)` and `clawloop train`: bad input leaves OUT alone, atomic output, resuming."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clawloop.config.train import TrainParams
from clawloop.core.tasks.pool import write_pool
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.errors import ClawloopError
from clawloop.phases.train.jobs import TrainJob, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEST_SH = ('if [ "$(cat /workspace/{f} 2>/dev/null)" = "{v}" ]; then echo 1; else echo 0; fi '
           '> /logs/verifier/reward.txt')




def make_task(name: str, value: str, steps: list[str] | None = None) -> Task:
    return Task(instruction=f"Write {value} into {name}.", skill="files", level=1,
                verifier=Verifier(files={"test.sh": FileSpec(content=TEST_SH.format(f=name, v=value))}),
                solution=Solution(steps=steps or [f"echo {value} > {name}"]))


@pytest.fixture()
def pool(tmp_path: Path) -> Path:
    p = tmp_path / "pool.jsonl"
    write_pool(p, [make_task(f"f{i}.txt", f"v{i}") for i in range(4)])
    return p


def quick(**sft: Any) -> TrainParams:
    return TrainParams.from_mapping({"sft": {"max_steps": 2, "per_device_train_batch_size": 2,
                                             "logging_steps": 1, **sft}, "dvclive": False})


def old_out(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("old")
    return out


def test_bad_inputs_raise_and_leave_out_untouched(tiny_model: Path, pool: Path, tmp_path: Path) -> None:
    out = old_out(tmp_path)
    no_tok = tmp_path / "no-tokenizer"
    no_tok.mkdir()
    for f in ("config.json", "model.safetensors"):
        shutil.copy(tiny_model / f, no_tok / f)
    with pytest.raises(ClawloopError, match=r"no-tokenizer: tokenizer: missing"):
        train(TrainJob("sft", no_tok, pool, out), quick())
    with pytest.raises(ClawloopError, match=r"checkpoint directory not found"):
        train(TrainJob("sft", tmp_path / "nope", pool, out), quick())
    with pytest.raises(ClawloopError, match="--method"):
        train(TrainJob("dpo", tiny_model, pool, out), quick())

    bad = tmp_path / "traj" / "episodes-00000.parquet"
    bad.parent.mkdir()
    pq.write_table(pa.table({"task_id": ["x"], "passed": ["yes"], "messages": ["[]"]}), bad)
    with pytest.raises(ClawloopError, match=r"episodes-00000.parquet: passed: expected type bool"):
        train(TrainJob("sft", tiny_model, pool, out, trajectories=[bad.parent]), quick())

    unsolvable = tmp_path / "unsolvable.jsonl"
    write_pool(unsolvable, [make_task("a.txt", "alpha", ["echo wrong > a.txt"])])
    with pytest.raises(ClawloopError, match="training set is empty"):
        train(TrainJob("sft", tiny_model, unsolvable, out), quick())

    broken_pool = tmp_path / "broken.jsonl"
    broken_pool.write_text('{"instruction": "x"}\n')
    with pytest.raises(ClawloopError, match=r"broken.jsonl:1: verifier"):
        train(TrainJob("sft", tiny_model, broken_pool, out), quick())
    probe = tmp_path / "probe.jsonl"
    probe.write_text(json.dumps({"task_id": make_task("f0.txt", "v0").id, "k": 2, "passes": 2,
                                 "errors": 0, "label": "too_easy"}) + "\n")
    with pytest.raises(ClawloopError, match="no learnable task"):
        train(TrainJob("grpo", tiny_model, pool, out, probe=probe), quick())
    # the loop's stage asks for the base back instead: nothing to learn is not a failure there
    kept = tmp_path / "kept"
    metrics = train(TrainJob("grpo", tiny_model, pool, kept, probe=probe, keep_base_without_tasks=True), quick())
    assert metrics == {"method": "grpo", "steps": 0, "grpo_tasks": 0}
    assert (kept / "model.safetensors").read_bytes() == (tiny_model / "model.safetensors").read_bytes()
    assert json.loads((kept / "train_meta.json").read_text())["stages"]["grpo"] == {"skipped": "no learnable task"}
    shutil.rmtree(kept)
    # the same for SFT on the policy's own passes only, when it passed nothing
    self_only = TrainParams.from_mapping({**quick().model_dump(), "data": {"self_fraction": 1.0}})
    metrics = train(TrainJob("sft", tiny_model, unsolvable, kept, keep_base_without_tasks=True), self_only)
    assert metrics == {"method": "sft", "steps": 0, "reference_passed": 0}
    assert (kept / "model.safetensors").read_bytes() == (tiny_model / "model.safetensors").read_bytes()
    kept_meta = json.loads((kept / "train_meta.json").read_text())
    assert "no trajectory to imitate (0 own passes" in kept_meta["stages"]["sft"]["skipped"]
    assert kept_meta["reference"] == {"skipped": "data.self_fraction 1.0"}  # not rolled out for nothing
    shutil.rmtree(kept)

    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == ["out"]
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


@pytest.mark.slow
def test_interrupted_sft_resumes_from_its_checkpoint(tiny_model: Path, pool: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import TrainerCallback

    from clawloop.phases.train import sft

    class Crash(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.global_step == 3:
                raise KeyboardInterrupt

    real = sft.build_trainer
    crash = {"on": True}

    def build(*a: Any, **kw: Any) -> Any:
        trainer = real(*a, **kw)
        if crash["on"]:
            trainer.add_callback(Crash())
        return trainer

    monkeypatch.setattr(sft, "build_trainer", build)
    out = old_out(tmp_path)
    params = quick(max_steps=4, save_steps=2)
    with pytest.raises(KeyboardInterrupt):
        train(TrainJob("sft", tiny_model, pool, out), params)
    tmp = tmp_path / "out.tmp"
    assert (tmp / "sft" / "checkpoint-2").is_dir() and (out / "keep.txt").exists()  # old OUT intact

    crash["on"] = False
    metrics = train(TrainJob("sft", tiny_model, pool, out, logs=tmp_path / "logs"), params)
    meta = json.loads((out / "train_meta.json").read_text())
    assert meta["resumed"] and meta["stages"]["sft"]["resumed_from"].endswith("checkpoint-2")
    assert meta["steps"] == 4 and metrics["steps"] == 4
    assert not tmp.exists() and not (out / "keep.txt").exists()


@pytest.mark.slow
def test_cli_train_sft_then_grpo(tiny_model: Path, pool: Path, tmp_path: Path) -> None:
    from clawloop.core.tasks.pool import read_pool

    tasks = read_pool(pool)
    probe = tmp_path / "probe.jsonl"
    probe.write_text("".join(json.dumps({"task_id": t.id, "k": 4, "passes": 1 if i < 2 else 0, "errors": 0,
                                         "label": "learnable" if i < 2 else "frontier"}) + "\n"
                             for i, t in enumerate(tasks)))
    params = tmp_path / "params.yaml"
    params.write_text("train:\n  method: sft+grpo\n  sft:\n    max_steps: 2\n    per_device_train_batch_size: 2\n"
                      "  grpo:\n    max_steps: 1\n    num_generations: 2\n    per_device_train_batch_size: 2\n"
                      "    max_completion_length: 32\n    max_turns: 2\n")
    out = tmp_path / "ckpt"
    cmd = [sys.executable, "-c", "from clawloop.cli import main; main()", "train",
           "--base", str(tiny_model), "--tasks", str(pool), "--probe", str(probe), "--out", str(out),
           "--params", str(params), "--set", "sft.logging_steps=1", "--set", "threads=1", "--logs", str(tmp_path / "logs")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    metrics = json.loads(r.stdout.strip().splitlines()[-2])
    assert metrics["method"] == "sft+grpo" and metrics["steps"] == 3 and metrics["reference_passed"] == 4
    assert metrics["grpo_rollouts"] == 2 and metrics["sft_examples"] == 4
    meta = json.loads((out / "train_meta.json").read_text())
    assert meta["base"] == str(tiny_model) and len(meta["data_sha256"]) == 64 and meta["wall_time_s"] > 0
    assert meta["grpo_tasks"] == 2 and meta["stages"]["grpo"]["base"].endswith("sft.done")
    assert {"model.safetensors", "tokenizer.json", "tokenizer_config.json", "config.json"} <= {
        p.name for p in out.iterdir()}
    assert not (tmp_path / "ckpt.tmp").exists()
    assert (tmp_path / "logs" / "sft" / "metrics.json").is_file()
    assert (tmp_path / "logs" / "grpo" / "metrics.json").is_file()

    r = subprocess.run([*cmd[:-2], "--set", "sft.bogus=1"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert "sft.bogus" in r.stderr


def test_workdir_resumes_only_the_same_run(tmp_path: Path) -> None:
    from clawloop.artifacts.checkpoint import WorkDir

    out = tmp_path / "ckpt"
    w = WorkDir(out, {"data": "a"}).open()
    assert not w.resumed and w.tmp == tmp_path / "ckpt.tmp"
    (w.stage_dir("sft") / "checkpoint-5").mkdir(parents=True)
    assert WorkDir(out, {"data": "a"}).open().resumed
    assert (w.stage_dir("sft") / "checkpoint-5").is_dir()
    w2 = WorkDir(out, {"data": "b"}).open()  # other inputs: start over
    assert not w2.resumed and not (w.stage_dir("sft") / "checkpoint-5").exists()
    done = w2.done_dir("sft")
    done.mkdir()
    (done / "model.safetensors").write_text("new")
    out.mkdir()
    (out / "model.safetensors").write_text("old")
    w2.commit(done)
    assert (out / "model.safetensors").read_text() == "new" and not w2.tmp.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_sft_trains_the_labels_its_caller_chose(tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One owner of which tasks train: a label the loop's params add (too_easy) reaches SFT
    instead of being dropped by a second, hard-coded filter."""
    pool = tmp_path / "pool.jsonl"
    tasks = [make_task("a.txt", "alpha"), make_task("b.txt", "beta"), make_task("c.txt", "gamma")]
    write_pool(pool, tasks)
    probe = tmp_path / "probe.jsonl"
    probe.write_text("".join(json.dumps({"task_id": t.id, "k": 2, "passes": p, "errors": 0, "label": lab}) + "\n"
                             for t, p, lab in zip(tasks, [2, 1, 0], ["too_easy", "learnable", "frontier"], strict=True)))
    chosen: list[list[str]] = []

    def record(sft_tasks: list[Task], *a: Any, **kw: Any) -> Any:
        chosen.append(sorted(t.id for t in sft_tasks))
        raise ClawloopError("stop before training")

    monkeypatch.setattr("clawloop.phases.train.jobs.reference_trajectories", record)
    for labels in (None, ["too_easy", "learnable"]):
        with pytest.raises(ClawloopError, match="stop before training"):
            train(TrainJob("sft", tiny_model, pool, tmp_path / "out", probe=probe,
                           **({"sft_labels": labels} if labels else {})), quick())
    assert chosen == [sorted([tasks[1].id, tasks[2].id]), sorted([tasks[0].id, tasks[1].id])]
