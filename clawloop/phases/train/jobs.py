"""`train(job, params, setup)`: the training stage as one call (what `clawloop train` and the DVC stage run).

Inputs are checked before anything is written: a bad pool, trajectory file, probe table or
checkpoint raises ClawloopError and leaves OUT as it was. Training happens in OUT.tmp (resumed
after an interruption when the inputs are unchanged) and OUT appears only at the end.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson

from clawloop.artifacts.checkpoint import WorkDir, check_base, load_tokenizer
from clawloop.artifacts.probe import read_probe, select_by_label
from clawloop.config.train import TrainParams
from clawloop.core.agent.harness import HarnessConfig, tools_for
from clawloop.core.io import hand_over, link_tree, write_json
from clawloop.core.tasks.environment import image_skip_reason
from clawloop.core.tasks.pool import read_pool
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError
from clawloop.phases.train import data as tdata
from clawloop.phases.train.grpo import run_grpo
from clawloop.phases.train.reference import reference_trajectories
from clawloop.phases.train.replay import read_conversations, replay, write_conversations
from clawloop.phases.train.sft import run_sft

if TYPE_CHECKING:
    import datasets

    from clawloop.core.rollout_settings import RolloutSettings

Method = Literal["sft", "grpo", "sft+grpo"]
METHODS: tuple[str, ...] = ("sft", "grpo", "sft+grpo")

SFT_LABELS = ("learnable", "frontier", "unprobed")
"""Default probe labels whose reference trajectories train SFT (too-easy tasks teach nothing
new); the loop passes params.yaml's `validation.train_labels` (+ unprobed) instead."""
GRPO_LABELS = ("learnable",)
"""Probe labels GRPO trains on: only they give groups with differing rewards."""


@dataclass(frozen=True)
class TrainJob:
    """What one training run reads and writes."""

    method: str
    """sft | grpo | sft+grpo."""
    base: str | Path
    """The checkpoint dir to start from."""
    tasks: str | Path | Sequence[Task]
    """A pool JSONL (or Task objects): reference solutions for SFT, the environments of GRPO."""
    out: str | Path
    """The checkpoint dir to write (atomically; must differ from `base`)."""
    trajectories: Sequence[str | Path] = ()
    """Rollout dirs or episodes*.parquet files; their passed episodes join SFT."""
    probe: str | Path | None = None
    """The probe side table: SFT uses the tasks labelled `sft_labels`, GRPO the learnable ones
    (only they give groups whose rewards differ). None: every task."""
    logs: str | Path | None = None
    """DVCLive directory (metrics per step); None logs nothing besides train_meta.json."""
    sft_labels: Sequence[str] = SFT_LABELS
    keep_base_without_tasks: bool = False
    """With nothing to learn from (method grpo and no learnable task; SFT and no trajectory, as when
    `data.self_fraction: 1.0` meets a policy that passed nothing), write the base unchanged
    (recorded as skipped) instead of failing: the loop goes on, and the next probe may find
    some; a direct `clawloop train` wants the error."""


@dataclass(frozen=True)
class EpisodeSetup:
    """How training's episodes look and where they run: the reference trajectories (`jobs` in
    parallel, on `executor`: local threads or Ray tasks) and GRPO's episodes (beside the trainer).
    Every sandbox opens with the default config (the task runtime mounted), as in rollouts."""

    harness_config: HarnessConfig | None = None
    """The harness rollouts use (prompt, limits), so training sees what evaluation renders
    (None: HarnessConfig())."""
    backend: str = "bwrap"
    jobs: int = 4
    executor: Any = None
    """clawloop.core.executor's params (params.yaml's `executor`); None: local threads."""

    @classmethod
    def of_loop(cls, ctx: RolloutSettings, executor: Any) -> EpisodeSetup:
        """The loop's setup: the plain harness (the weights never see a playbook), its sandboxes."""
        return cls(harness_config=ctx.harness, backend=ctx.backend, jobs=ctx.jobs, executor=executor)


def _base_fingerprint(base: Path) -> dict[str, Any]:
    files = sorted(p for p in base.iterdir() if p.is_file())
    return {"path": str(base.resolve()),
            "files": {p.name: [p.stat().st_size, int(p.stat().st_mtime)] for p in files}}


def _tasks_sha(tasks: Sequence[Task]) -> str:
    return hashlib.sha256("\n".join(t.id for t in tasks).encode()).hexdigest()


def _select(tasks: list[Task], probe: dict[str, Any] | None, labels: Sequence[str]) -> list[Task]:
    return tasks if probe is None else select_by_label(tasks, probe, labels)


def train(job: TrainJob, params: TrainParams | None = None, setup: EpisodeSetup | None = None) -> dict[str, Any]:
    """Train `job.base` with `job.method` into the checkpoint dir `job.out`; returns the final metrics."""
    t0 = time.time()
    params = params or TrainParams.for_profile("cpu")
    if job.method not in METHODS:
        raise ClawloopError(f"--method: expected one of {', '.join(METHODS)}, got {job.method!r}")
    base, out = check_base(job.base), Path(job.out)
    if out.resolve() == base.resolve():
        raise ClawloopError(f"{out}: the output must differ from the base checkpoint")
    pool = read_pool(job.tasks) if isinstance(job.tasks, str | Path) else list(job.tasks)
    probe_table = read_probe(job.probe) if job.probe is not None else None
    self_convs = (tdata.load_self_trajectories(job.trajectories, params.data.max_per_task,
                                               order=params.data.self_order, min_process=params.data.self_min_process)
                  if job.trajectories else [])
    if params.threads:
        import torch

        torch.set_num_threads(params.threads)

    run = _Run(job, params, setup or EpisodeSetup(), base,
               {"method": job.method, "base": str(base), "out": str(out), "stages": {}})
    sft_data = (_on_main(run, lambda: run.sft_dataset(_select(pool, probe_table, job.sft_labels), self_convs))
                if "sft" in job.method else None)
    grpo_tasks = run.grpo_tasks(_select(pool, probe_table, GRPO_LABELS)) if "grpo" in job.method else []
    work = WorkDir(out, run.fingerprint())
    if _rank() == 0:
        work.open()
    _barrier()
    meta = run.meta
    meta["resumed"] = work.resumed
    last_done = run.stages(work, sft_data, grpo_tasks)
    _barrier()  # every process has read the stages' metadata before the main one moves them
    stages = [s for s in meta["stages"].values() if "metrics" in s]
    meta["steps"] = sum(int(s.get("steps", 0)) for s in stages)
    meta["metrics"] = _summary_metrics(meta)
    meta["wall_time_s"] = round(time.time() - t0, 3)
    if _rank() == 0:
        write_json(last_done / "train_meta.json", meta)
        if run.conversations:  # what the next iteration replays (train.data.replay)
            write_conversations(last_done, run.conversations)
        work.commit(last_done)
    _barrier()
    return meta["metrics"]


def weights_of(method: str) -> str | None:
    """The weight training of a train.method: the playbook methods' part of it, None for
    `playbook` (the weights stay)."""
    return {"playbook": None, "sft+playbook": "sft"}.get(method, method)


def train_weights(job: TrainJob, params: TrainParams | None = None, setup: EpisodeSetup | None = None,
                  ) -> dict[str, Any]:
    """The weight part of `job.method`, any train.method (the playbook ones included): `train` with
    the weight training of the method, or for `playbook` the base hard-linked as the checkpoint
    (its playbook is replaced afterwards)."""
    weights = weights_of(job.method)
    if weights is None:
        hand_over(job.base, job.out)
        return {"method": job.method, "steps": 0}
    return {**train(dataclasses.replace(job, method=weights), params, setup), "method": job.method}


def held_in_rollouts(validated: Path, self_rollouts: Path | None) -> list[Path]:
    """The policy's own held-in episodes that exist: the probe's (under the validated dir) and the
    last evaluation's pool suite (never a held-out suite)."""
    return [d for d in (validated / "probe", self_rollouts and self_rollouts / "pool") if d and d.is_dir()]


@dataclass
class _Run:
    """One training run's steps; each records what it did in `meta` (train_meta.json)."""

    job: TrainJob
    params: TrainParams
    setup: EpisodeSetup
    base: Path
    meta: dict[str, Any]
    conversations: list[tdata.Conversation] = field(default_factory=list)
    """What SFT trains on, in order (set by sft_dataset)."""

    def sft_dataset(self, tasks: list[Task], self_convs: list[tdata.Conversation]) -> datasets.Dataset | None:
        """SFT's examples: the tasks' reference trajectories mixed with the policy's own passed
        episodes; with none, None under `keep_base_without_tasks` (SFT recorded as skipped), else
        an error."""
        setup, data = self.setup, self.params.data
        refs: list[tdata.Conversation] = []
        if not tdata.takes_reference(data.self_fraction):
            self.meta["reference"] = {"skipped": "data.self_fraction 1.0"}
        else:
            refs, results = reference_trajectories(
                tasks, setup.backend, harness_config=setup.harness_config, workers=setup.jobs, executor=setup.executor,
                shape=data.reference_shape, mistakes=data.reference_mistakes,
                previews=data.reference_previews == "keep", restate=data.reference_thoughts == "restate",
                checks=data.reference_checks)
            self.meta["reference"] = {**Counter(r.outcome for r in results), "shape": data.reference_shape,
                                      "previews": data.reference_previews, "thoughts": data.reference_thoughts,
                                      "checks": data.reference_checks,
                                      "with_mistake": sum(tdata.has_untrained_turn(r.conversation.messages)
                                                          for r in results if r.conversation)}
        if any(tdata.has_untrained_turn(c.messages) for c in refs) and not tdata.masks_untrained_turns(
                load_tokenizer(self.base)):
            kept = [c for c in refs if not tdata.has_untrained_turn(c.messages)]
            print(f"train: {len(refs) - len(kept)} reference(s) with a planned mistake left out: the chat template "
                  f"of {self.base} would train on the mistake (re-bootstrap it: the templates under "
                  "clawloop/bootstrap/templates keep such a turn out of the loss)", file=sys.stderr)
            self.meta["reference"]["mistakes_left_out"] = len(refs) - len(kept)
            refs = kept
        convs = tdata.mix(refs, self_convs, data.self_fraction, data.seed)
        if data.replay and convs:
            previous = read_conversations(self.base)
            convs = replay(previous, convs, data.replay, data.seed)
            self.meta["replay"] = {"share": data.replay, "available": len(previous),
                                   "replayed": sum(bool(c.meta.get("replayed")) for c in convs)}
        if not convs and self.job.keep_base_without_tasks:
            self.meta["stages"]["sft"] = {"skipped": f"no trajectory to imitate ({len(self_convs)} own passes, "
                                                     f"data.self_fraction {data.self_fraction})"}
            return None
        dataset = tdata.to_dataset(convs, tools_for(setup.harness_config))  # raises when empty
        self.meta["data_sha256"] = tdata.data_sha256(convs)
        self.conversations = convs
        self.meta["examples"] = {"reference": sum(c.source == "reference" for c in convs),
                                 "self": sum(c.source == "self" for c in convs),
                                 "hinted": sum(bool(c.meta.get("hinted")) for c in convs),
                                 "replayed": sum(bool(c.meta.get("replayed")) for c in convs)}
        # How much of inspect -> act -> check each trained conversation shows (0-2): brevity shows here.
        self.meta["process_scores"] = {src: {str(k): n for k, n in sorted(Counter(
            tdata.process_score(c.messages) for c in convs if c.source == src).items())} for src in ("reference", "self")}
        return dataset

    def grpo_tasks(self, learnable: list[Task]) -> list[Task]:
        """GRPO's tasks: the learnable ones this backend can run."""
        job = self.job
        tasks = [t for t in learnable if image_skip_reason(t, self.setup.backend) is None]
        self.meta["grpo_tasks"] = len(tasks)
        self.meta["grpo_tasks_sha256"] = _tasks_sha(tasks)
        if not tasks and job.method == "grpo" and not job.keep_base_without_tasks:
            raise ClawloopError(f"{job.probe or job.tasks}: no learnable task to train GRPO on")
        if tasks and self.params.grpo.use_vllm and importlib.util.find_spec("vllm") is None:
            raise ClawloopError("grpo.use_vllm: vLLM is not installed here; install the gpu extra "
                                "or set grpo.use_vllm=false")
        return tasks

    def fingerprint(self) -> dict[str, Any]:
        """What OUT.tmp is resumed on: the same base, data, tasks, knobs and harness."""
        return {"method": self.job.method, "base": _base_fingerprint(self.base), "data": self.meta.get("data_sha256"),
                "grpo_tasks": self.meta.get("grpo_tasks_sha256"), "params": self.params.model_dump(mode="json"),
                "harness": (self.setup.harness_config or HarnessConfig()).model_dump(mode="json")}

    def _logs(self, stage: str) -> Path | None:
        """The stage's DVCLive dir: a subdir per stage when both run."""
        logs = self.job.logs
        logs_dir = Path(logs) if logs is not None and self.params.dvclive else None
        return logs_dir / stage if logs_dir and self.job.method == "sft+grpo" else logs_dir

    def stages(self, work: WorkDir, sft_data: datasets.Dataset | None, grpo_tasks: list[Task]) -> Path:
        """SFT, then GRPO from its result, each skipped when an interrupted run finished it;
        returns the dir of the last stage's model."""
        meta, setup, current, last_done = self.meta, self.setup, self.base, None
        if sft_data is not None:
            if not work.is_done("sft"):
                run_sft(current, sft_data, self.params.sft, work.stage_dir("sft"), work.done_dir("sft"),
                        logs_dir=self._logs("sft"), meta={"data_sha256": meta["data_sha256"]})
            meta["stages"]["sft"] = _read_meta(work.done_dir("sft"))
            current = last_done = work.done_dir("sft")
        if grpo_tasks:
            if not work.is_done("grpo"):
                run_grpo(current, grpo_tasks, self.params.grpo, work.stage_dir("grpo"), work.done_dir("grpo"),
                         backend=setup.backend, harness_config=setup.harness_config, logs_dir=self._logs("grpo"),
                         meta={"tasks_sha256": meta["grpo_tasks_sha256"]})
            meta["stages"]["grpo"] = _read_meta(work.done_dir("grpo"))
            last_done = work.done_dir("grpo")
        elif "grpo" in self.job.method:
            meta["stages"]["grpo"] = {"skipped": "no learnable task"}
        if last_done is None:  # nothing to learn from: the checkpoint is the base
            last_done = work.done_dir(self.job.method.split("+")[-1])
            if _rank() == 0:
                shutil.rmtree(last_done, ignore_errors=True)
                # the base's own metadata would describe another run
                link_tree(self.base, last_done, ignore=shutil.ignore_patterns("train_meta.json", "model_meta.json"))
        assert last_done is not None
        return last_done


def _rank() -> int:
    """This process's rank under accelerate/torchrun (0 when not distributed)."""
    return int(os.environ.get("RANK", "0"))


def _distributed() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def _state() -> Any:
    """accelerate's process state as the trainer sets it up (`use_cpu` without CUDA: gloo). A bare
    PartialState() on a CPU said "not distributed": the barriers before the trainer waited for
    nothing (found running 2 CPU processes, tests/test_multiproc_sft.py)."""
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def _barrier() -> None:
    if _distributed():
        _state().wait_for_everyone()


def _on_main(run: _Run, build: Callable[[], Any]) -> Any:
    """`build()` on the main process only, its result (and what it recorded in `run.meta` and
    `run.conversations`) sent to the others: under accelerate / torchrun the reference trajectories
    run their sandboxes once, not once per process, and every process trains on the same examples."""
    if not _distributed():
        return build()
    from accelerate.utils import broadcast_object_list

    _state()  # the process group
    box = [build() if _rank() == 0 else None, run.meta, run.conversations]
    broadcast_object_list(box, from_process=0)
    run.meta, run.conversations = box[1], box[2]
    return box[0]


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
    grpo_meta = meta["stages"].get("grpo", {})
    grpo = grpo_meta.get("metrics")
    if grpo:
        out["grpo_reward"] = grpo.get("reward")
        out["grpo_rollouts"] = int(grpo.get("rollouts", 0))
        out["grpo_masked_rollouts"] = int(grpo_meta.get("masked_rollouts", 0))  # counted once, by run_grpo
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
