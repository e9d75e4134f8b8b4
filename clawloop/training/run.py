"""`train(...)`: the training stage as one call (what `clawloop train` and the DVC stage run).

Inputs are checked before anything is written: a bad pool, trajectory file, probe table or
checkpoint raises ClawloopError and leaves OUT as it was. Training happens in OUT.tmp (resumed
after an interruption when the inputs are unchanged) and OUT appears only at the end.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import orjson

from clawloop.agent.harness import HarnessConfig
from clawloop.errors import ClawloopError
from clawloop.tasks.environment import image_skip_reason
from clawloop.tasks.task import Task
from clawloop.training.checkpoint import WorkDir, check_base
from clawloop.training.config import TrainParams

Method = Literal["sft", "grpo", "sft+grpo"]
METHODS: tuple[str, ...] = ("sft", "grpo", "sft+grpo")

SFT_LABELS = ("learnable", "frontier", "unprobed")
"""Default probe labels whose reference trajectories train SFT (too-easy tasks teach nothing
new); the loop passes params.yaml's `validation.train_labels` (+ unprobed) instead."""
GRPO_LABELS = ("learnable",)
"""Probe labels GRPO trains on: only they give groups with differing rewards."""


def _base_fingerprint(base: Path) -> dict[str, Any]:
    files = sorted(p for p in base.iterdir() if p.is_file())
    return {"path": str(base.resolve()),
            "files": {p.name: [p.stat().st_size, int(p.stat().st_mtime)] for p in files}}


def _tasks_sha(tasks: Sequence[Task]) -> str:
    return hashlib.sha256("\n".join(t.id for t in tasks).encode()).hexdigest()


def _select(tasks: list[Task], probe: dict[str, Any] | None, labels: Sequence[str]) -> list[Task]:
    if probe is None:
        return tasks
    from clawloop.validation.probe import select_by_label

    return select_by_label(tasks, probe, labels)


def train(method: str, base: str | Path, tasks: str | Path | Sequence[Task],
          trajectories: Sequence[str | Path] | None, probe: str | Path | None, out: str | Path,
          params: TrainParams | None = None, *, logs: str | Path | None = None,
          harness_config: HarnessConfig | None = None, backend: str = "bwrap", jobs: int = 4,
          sandbox_config: Any = None, keep_base_without_tasks: bool = False,
          executor: Any = None, sft_labels: Sequence[str] = SFT_LABELS) -> dict[str, Any]:
    """Train `base` with `method` and write the checkpoint dir `out`; returns the final metrics.

    tasks: a pool JSONL (or Task objects): reference solutions for SFT, the environments of GRPO.
    trajectories: rollout dirs or episodes*.parquet files; their passed episodes join SFT.
    probe: the probe side table; SFT uses the tasks labelled `sft_labels` (default learnable,
    frontier, unprobed), GRPO the learnable ones (only they give groups whose rewards differ).
    logs: DVCLive directory (metrics per step); None logs nothing besides train_meta.json.
    harness_config: the harness settings rollouts use (prompt, limits), so the reference
    trajectories and GRPO episodes look like them (default: HarnessConfig()).
    backend, jobs, sandbox_config: the sandboxes of reference trajectories (`jobs` in parallel) and
    GRPO episodes (params.yaml's `sandbox` section in the loop; None config: the task runtime mounted).
    executor: where reference trajectories run (clawloop.executor: local threads or Ray tasks;
    params.yaml's `executor`); GRPO episodes run beside the trainer.
    keep_base_without_tasks: with method grpo and no learnable task, write the base unchanged
    (recorded as skipped) instead of failing: the loop goes on, and the next probe may find
    some; a direct `clawloop train --method grpo` wants the error.
    """
    t0 = time.time()
    params = params or TrainParams.for_profile("cpu")
    if method not in METHODS:
        raise ClawloopError(f"--method: expected one of {', '.join(METHODS)}, got {method!r}")
    base = check_base(base)
    out = Path(out)
    if out.resolve() == base.resolve():
        raise ClawloopError(f"{out}: the output must differ from the base checkpoint")
    if isinstance(tasks, str | Path):
        from clawloop.tasks.pool import read_pool

        pool = read_pool(tasks)
    else:
        pool = list(tasks)
    probe_table = None
    if probe is not None:
        from clawloop.validation.probe import read_probe

        probe_table = read_probe(probe)
    from clawloop.training import data as tdata

    self_convs = (tdata.load_self_trajectories(trajectories, params.data.max_per_task)
                  if trajectories else [])
    logs_dir = Path(logs) if logs is not None and params.dvclive else None
    if params.threads:
        import torch

        torch.set_num_threads(params.threads)

    meta: dict[str, Any] = {"method": method, "base": str(base), "out": str(out), "stages": {}}
    sft_data = None
    if "sft" in method:
        from clawloop.training.reference import reference_trajectories

        sft_tasks = _select(pool, probe_table, sft_labels)
        refs, results = reference_trajectories(
            sft_tasks, backend, sandbox_config=sandbox_config, harness_config=harness_config, workers=jobs,
            executor=executor)
        meta["reference"] = dict(Counter(r.outcome for r in results))
        convs = tdata.mix(refs, self_convs, params.data.self_fraction, params.data.seed)
        from clawloop.agent.harness import tools_for

        sft_data = tdata.to_dataset(convs, tools_for(harness_config))  # raises when empty
        meta["data_sha256"] = tdata.data_sha256(convs)
        meta["examples"] = {"reference": sum(c.source == "reference" for c in convs),
                            "self": sum(c.source == "self" for c in convs)}
    grpo_tasks: list[Task] = []
    if "grpo" in method:
        grpo_tasks = _select(pool, probe_table, GRPO_LABELS)
        grpo_tasks = [t for t in grpo_tasks if image_skip_reason(t, backend) is None]
        meta["grpo_tasks"] = len(grpo_tasks)
        meta["grpo_tasks_sha256"] = _tasks_sha(grpo_tasks)
        if not grpo_tasks and method == "grpo" and not keep_base_without_tasks:
            raise ClawloopError(f"{probe or tasks}: no learnable task to train GRPO on")
        import importlib.util

        if grpo_tasks and params.grpo.use_vllm and importlib.util.find_spec("vllm") is None:
            raise ClawloopError("grpo.use_vllm: vLLM is not installed here; install the gpu extra "
                                "or set grpo.use_vllm=false")

    fingerprint = {"method": method, "base": _base_fingerprint(base), "data": meta.get("data_sha256"),
                   "grpo_tasks": meta.get("grpo_tasks_sha256"), "params": params.model_dump(mode="json"),
                   "harness": (harness_config or HarnessConfig()).model_dump(mode="json")}
    work = WorkDir(out, fingerprint)
    if _rank() == 0:
        work.open()
    _barrier()
    meta["resumed"] = work.resumed
    current, last_done = base, None
    if sft_data is not None:
        from clawloop.training.sft import run_sft

        if not work.is_done("sft"):
            run_sft(current, sft_data, params.sft, work.stage_dir("sft"), work.done_dir("sft"),
                    logs_dir=logs_dir / "sft" if logs_dir and method == "sft+grpo" else logs_dir,
                    meta={"data_sha256": meta["data_sha256"]})
        meta["stages"]["sft"] = _read_meta(work.done_dir("sft"))
        current = last_done = work.done_dir("sft")
    if grpo_tasks:
        from clawloop.training.grpo import run_grpo

        if not work.is_done("grpo"):
            run_grpo(current, grpo_tasks, params.grpo, work.stage_dir("grpo"), work.done_dir("grpo"),
                     backend=backend, sandbox_config=sandbox_config, harness_config=harness_config,
                     logs_dir=logs_dir / "grpo" if logs_dir and method == "sft+grpo" else logs_dir,
                     meta={"tasks_sha256": meta["grpo_tasks_sha256"]})
        meta["stages"]["grpo"] = _read_meta(work.done_dir("grpo"))
        last_done = work.done_dir("grpo")
    elif "grpo" in method:
        meta["stages"]["grpo"] = {"skipped": "no learnable task"}
        if last_done is None:  # GRPO alone and nothing to learn from: the checkpoint is the base
            last_done = work.done_dir("grpo")
            if _rank() == 0:
                import shutil

                from clawloop.io import link_tree

                shutil.rmtree(last_done, ignore_errors=True)
                # the base's own metadata would describe another run
                link_tree(base, last_done, ignore=shutil.ignore_patterns("train_meta.json", "model_meta.json"))
    assert last_done is not None
    stages = [s for s in meta["stages"].values() if "metrics" in s]
    meta["steps"] = sum(int(s.get("steps", 0)) for s in stages)
    meta["metrics"] = _summary_metrics(meta)
    meta["wall_time_s"] = round(time.time() - t0, 3)
    from clawloop.io import write_json

    if _rank() == 0:
        write_json(last_done / "train_meta.json", meta)
        work.commit(last_done)
    _barrier()
    return meta["metrics"]


def _rank() -> int:
    """This process's rank under accelerate/torchrun (0 when not distributed)."""
    import os

    return int(os.environ.get("RANK", "0"))


def _barrier() -> None:
    import os

    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()


def _read_meta(d: Path) -> dict[str, Any]:
    return orjson.loads((d / "train_meta.json").read_bytes())


def _summary_metrics(meta: dict[str, Any]) -> dict[str, Any]:
    """Flat, stable metrics for `dvc metrics show`: per stage loss/reward, steps and data sizes."""
    out: dict[str, Any] = {"method": meta["method"], "steps": meta["steps"]}
    sft = meta["stages"].get("sft", {}).get("metrics")
    if sft:
        out["sft_train_loss"] = sft.get("train_loss")
        out["sft_final_loss"] = sft.get("loss")
        out["sft_token_accuracy"] = sft.get("mean_token_accuracy")
        out["sft_examples"] = int(sft.get("examples", 0))
        out["sft_runtime_s"] = sft.get("train_runtime")
    grpo = meta["stages"].get("grpo", {}).get("metrics")
    if grpo:
        out["grpo_reward"] = grpo.get("reward")
        out["grpo_rollouts"] = int(grpo.get("rollouts", 0))
        out["grpo_masked_rollouts"] = int(grpo.get("rollouts_error", 0))
        out["grpo_frac_reward_zero_std"] = grpo.get("frac_reward_zero_std")
        out["grpo_runtime_s"] = grpo.get("train_runtime")
    if "grpo_tasks" in meta:
        out["grpo_tasks"] = int(meta["grpo_tasks"])
    if "reference" in meta:
        out["reference_passed"] = int(meta["reference"].get("passed", 0))
    return {k: v for k, v in out.items() if v is not None}


def describe(method: str, n_tasks: int, metrics: dict[str, Any]) -> str:
    """The train stage's account of one iteration: method, tasks, GRPO and playbook figures, steps."""
    grpo = (f", GRPO on {metrics['grpo_tasks']} learnable" + (" (skipped)" if not metrics["grpo_tasks"] else "")
            if "grpo_tasks" in metrics else "")
    book = (f", playbook {metrics['playbook_entries']} entries / {metrics['playbook_tokens']} tokens"
            f" (+{metrics['playbook_added']}, -{metrics['playbook_pruned']})" if "playbook" in method else "")
    return f"{method}, {n_tasks} tasks{grpo}{book}, {metrics.get('steps', 0)} steps"
