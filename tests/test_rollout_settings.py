"""The stages build their episodes from params.yaml alike: training sees the system prompt evaluation
uses, every phase runs on `sandbox.backend` with `sandbox.jobs`, every policy loads on
`rollout.backend`, rollouts are seeded by `rollout.seed` (issue #18)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from clawloop.config.params import Params, load_params
from clawloop.core.agent.harness import initial_messages, system_prompt
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[1]


class _Stop(Exception):
    """Raised by a stand-in once it has seen what a stage hands it."""


def _params(tmp_path: Path, edit: Any = None) -> Params:
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    if edit is not None:
        edit(raw)
    out = tmp_path / "params.yaml"
    out.write_text(yaml.safe_dump(raw))
    return load_params(out)


def _task() -> Task:
    return Task(instruction="Write alpha into a.txt.", skill="files", level=1,
                verifier=Verifier(files={"test.sh": FileSpec(content="echo 1 > /logs/verifier/reward.txt")}),
                solution=Solution(steps=["echo alpha > a.txt"]))


def _run(monkeypatch: pytest.MonkeyPatch, stage: str, params: Params, *argv: str | Path) -> None:
    import importlib

    # `.venv/bin/pytest` (the README's command) puts no repo root on sys.path: stages/ is not a package there.
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    monkeypatch.setattr(sys, "argv", [f"stages/{stage}.py", *map(str, argv)])
    with pytest.raises(_Stop):
        importlib.import_module(f"stages.{stage}").main(params)


def _validated(tmp_path: Path, tasks: list[Task]) -> Path:
    from clawloop.artifacts.probe import write_probe
    from clawloop.core.tasks.pool import write_pool

    d = tmp_path / "validated"
    d.mkdir()
    write_pool(d / "valid.jsonl", tasks)
    write_probe(d / "probe.jsonl", [])
    return d


def _capture_train(monkeypatch: pytest.MonkeyPatch, seen: dict[str, Any]) -> None:
    def fake_train(job: Any, params: Any, setup: Any) -> dict[str, Any]:
        seen.update(vars(setup))
        raise _Stop

    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setattr("clawloop.phases.train.jobs.train", fake_train)  # the train stage's, through train_weights
    monkeypatch.setattr("clawloop.transfer.train", fake_train)


def _patch_suites(monkeypatch: pytest.MonkeyPatch, suites: list[Any]) -> None:
    """The evaluate and transfer stages see `suites` as params.yaml's suites."""
    monkeypatch.syspath_prepend(str(ROOT))
    for module in ("clawloop.phases.evaluate.evaluate", "clawloop.transfer"):
        monkeypatch.setattr(f"{module}.eval_suites", lambda params, manifest, *_, **__: suites)


def _capture_rollouts(monkeypatch: pytest.MonkeyPatch, seen: dict[str, Any], task: Task) -> None:
    def fake_rollouts(tasks: Any, policy: Any, config: Any, **kwargs: Any) -> list[Any]:
        seen.update(kwargs, config=config)
        raise _Stop

    _patch_suites(monkeypatch, [("shell-core", [task], True)])
    monkeypatch.setattr("clawloop.core.rollout_settings.RolloutSettings.load_policy", lambda *a, **k: object())
    monkeypatch.setattr("clawloop.core.rollout_settings.run_rollouts", fake_rollouts)


@pytest.mark.parametrize("stage", ["train", "transfer"])
def test_training_renders_the_system_prompt_evaluation_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           stage: str) -> None:
    """Bug: the train stage rendered its reference trajectories and GRPO prompts with the task's own
    limits ("16 turns, 30 s") while evaluation rendered rollout.max_turns/command_timeout_s ("6 turns, 10 s")."""
    params, task = _params(tmp_path), _task()
    validated = _validated(tmp_path, [task])
    evaluated: dict[str, Any] = {}
    _capture_rollouts(monkeypatch, evaluated, task)
    _run(monkeypatch, "evaluate", params, "--iteration", "1", "--checkpoint", tmp_path, "--out", tmp_path / "eval")

    trained: dict[str, Any] = {}
    _capture_train(monkeypatch, trained)
    if stage == "train":
        _run(monkeypatch, "train", params, "--iteration", "1", "--validated", validated, "--policy", tmp_path,
             "--out", tmp_path / "checkpoint")
    else:
        _run(monkeypatch, "transfer", params, "--base", tmp_path, "--first", validated, "--final", validated,
             "--out", tmp_path / "transfer")
    assert trained.get("harness_config") is not None, f"stage {stage} gives training no harness config"
    evaluated_harness = evaluated["config"].harness
    assert system_prompt(task, trained["harness_config"]) == system_prompt(task, evaluated_harness)
    assert initial_messages(task, trained["harness_config"]) == initial_messages(task, evaluated_harness)
    assert trained["harness_config"] == evaluated_harness


def test_train_stage_uses_the_sandbox_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug: reference trajectories and GRPO ran on train.data.sandbox_backend (bwrap) with
    train.data.reference_workers threads, whatever params.yaml's `sandbox` section said."""
    params = _params(tmp_path, lambda r: r["sandbox"].update(backend="local", jobs=3))
    seen: dict[str, Any] = {}
    _capture_train(monkeypatch, seen)
    _run(monkeypatch, "train", params, "--iteration", "1", "--validated", _validated(tmp_path, [_task()]),
         "--policy", tmp_path, "--out", tmp_path / "checkpoint")
    assert (seen.get("backend"), seen.get("jobs")) == ("local", 3)


def test_train_runs_reference_trajectories_on_the_given_backend(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from clawloop.config.train import TrainParams
    from clawloop.phases.train.jobs import EpisodeSetup, TrainJob, train

    base = tmp_path / "base"
    base.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (base / name).write_text("{}")
    seen: dict[str, Any] = {}

    def fake_reference(tasks: Any, backend: str, **kwargs: Any) -> Any:
        seen.update(kwargs, backend=backend)
        raise _Stop

    monkeypatch.setattr("clawloop.phases.train.jobs.reference_trajectories", fake_reference)
    with pytest.raises(_Stop):
        train(TrainJob("sft", base, [_task()], tmp_path / "out"), TrainParams.for_profile("cpu"),
              EpisodeSetup(backend="local", jobs=3))
    assert (seen["backend"], seen["workers"]) == ("local", 3)


@pytest.mark.parametrize(("section", "key", "hint"), [
    ("train", "sandbox_backend", "train.data.sandbox_backend: replaced by sandbox.backend"),
    ("train", "reference_workers", "train.data.reference_workers: replaced by sandbox.jobs"),
    ("transfer", "sandbox_backend", "transfer.train.data.sandbox_backend: replaced by sandbox.backend"),
])
def test_old_sandbox_keys_of_train_data_are_refused_with_a_hint(tmp_path: Path, section: str, key: str,
                                                                hint: str) -> None:
    def edit(raw: dict[str, Any]) -> None:
        train = raw[section] if section == "train" else raw[section]["train"]
        train.setdefault("data", {})[key] = "docker" if key == "sandbox_backend" else 8

    with pytest.raises(ClawloopError) as e:
        _params(tmp_path, edit)
    assert hint in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_clawloop_train_refuses_the_old_keys_too() -> None:
    from clawloop.config.train import TrainParams

    with pytest.raises(ClawloopError, match="data.sandbox_backend: replaced by sandbox.backend"):
        TrainParams.from_mapping({"data": {"sandbox_backend": "docker"}}, where="--set")


def test_rollouts_are_seeded_by_their_own_knob(tmp_path: Path) -> None:
    """Bug: rollout sampling took synthesis.seed, so an ablation of the synthesis seed also changed
    every evaluation's sampling."""
    from clawloop.core.rollout_settings import rollout_settings

    params = _params(tmp_path, lambda r: (r["synthesis"].update(seed=7), r["rollout"].update(seed=3)))
    assert rollout_settings(params).sampling.seed == 3
    assert load_params(ROOT / "params.yaml").rollout.seed == load_params(ROOT / "params.yaml").synthesis.seed


def _record_policy_loads(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every PolicySpec a stage loads, in order; the load itself stops the stage (_Stop)."""
    seen: list[Any] = []

    def fake_load(spec: Any) -> Any:
        seen.append(spec)
        raise _Stop

    monkeypatch.setattr("clawloop.core.rollout_settings.load_policy", fake_load)  # RolloutSettings.load_policy loads through it
    return seen


def test_grounded_synthesis_loads_the_policy_on_the_rollout_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug: synthesize handed the grounded routines the policy *path*, which it loaded as `hf` whatever
    rollout.backend said."""
    from clawloop.policy.load import PolicySpec

    params = _params(tmp_path, lambda r: (r["rollout"].update(backend="openai"),
                                          r["synthesis"].update(routines={"hindsight": 1.0}, tasks_per_iteration=2)))
    seen = _record_policy_loads(monkeypatch)
    _run(monkeypatch, "synthesize", params, "--iteration", "1", "--policy", tmp_path / "policy",
         "--out", tmp_path / "pool")
    assert len(seen) == 1 and isinstance(seen[0], PolicySpec), seen
    assert (seen[0].backend, seen[0].model) == ("openai", str(tmp_path / "policy"))


def test_the_stages_load_every_policy_from_the_one_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """evaluate, validate and synthesize (grounded routines) load their policy through `RolloutSettings.load_policy`:
    one PolicySpec (rollout.backend and its options), the checkpoint path and the id filled in."""
    from clawloop.core.rollout_settings import rollout_settings

    params = _params(tmp_path, lambda r: (r["rollout"].update(backend="openai", engine={"threads": 2, "forward": "fast", "speculate": 5}),
                                          r["synthesis"].update(routines={"hindsight": 1.0}, tasks_per_iteration=2)))
    seen = _record_policy_loads(monkeypatch)
    _patch_suites(monkeypatch, [])
    monkeypatch.setattr("clawloop.phases.validate.validate.validate_pool", lambda *a, **k: (
        [], {"input": 0, "rejected": {}, "tasks_per_s": 0.0}))
    policy = tmp_path / "policy"
    _run(monkeypatch, "evaluate", params, "--iteration", "1", "--checkpoint", policy, "--out", tmp_path / "eval")
    pool = tmp_path / "pool.jsonl"
    pool.write_text("")
    _run(monkeypatch, "validate", params, "--iteration", "1", "--pool", pool, "--policy", policy,
         "--out", tmp_path / "validated")
    _run(monkeypatch, "synthesize", params, "--iteration", "1", "--policy", policy, "--out", tmp_path / "pool")
    expected = rollout_settings(params).policy
    assert [s.policy_id for s in seen] == ["iter-1", "iter-0", "policy"]
    for spec in seen:
        assert spec.model == str(policy)
        assert spec.model_copy(update={"model": "", "policy_id": None}) == expected
    assert expected.backend == "openai" and expected.hf.engine.threads == 2 and expected.llamacpp.parallel == params.rollout.batch
    assert expected.hf.engine.forward == "fast" and expected.hf.engine.speculate == 5


def test_the_stages_run_episodes_on_the_contexts_sandboxes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every stage's episodes take backend, jobs, batch and sampling from the context; every sandbox
    opens with the default config (params.yaml has none to give)."""
    from clawloop.core.rollout_settings import rollout_settings

    params = _params(tmp_path, lambda r: (r["sandbox"].update(backend="local", jobs=3), r["rollout"].update(batch=5)))
    ctx, task = rollout_settings(params), _task()
    evaluated: dict[str, Any] = {}
    _capture_rollouts(monkeypatch, evaluated, task)
    _run(monkeypatch, "evaluate", params, "--iteration", "1", "--checkpoint", tmp_path, "--out", tmp_path / "eval")
    config = evaluated["config"]
    assert (config.backend, config.batch_size, config.sampling, config.sandbox_config) == ("local", 5, ctx.sampling, None)
    trained: dict[str, Any] = {}
    _capture_train(monkeypatch, trained)
    _run(monkeypatch, "train", params, "--iteration", "1", "--validated", _validated(tmp_path, [task]),
         "--policy", tmp_path, "--out", tmp_path / "checkpoint")
    assert (trained["backend"], trained["jobs"], trained["harness_config"]) == ("local", 3, ctx.harness)


def test_transfer_reports_the_paired_difference_of_the_two_task_sets(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """transfer.json gives, per held-out suite, the final set's model against the first's on the same
    tasks: the rates, the flips and the exact McNemar p (not only two pass rates a reader cannot test);
    its pass@1 pools the suites' graded tasks."""
    import importlib
    import json

    from clawloop.core.trajectory import EpisodeRecord

    params = _params(tmp_path, lambda r: r["transfer"].update(base=None))
    tasks = [_task().model_copy(update={"instruction": f"Write alpha into a{i}.txt."}) for i in range(12)]
    validated = _validated(tmp_path, tasks)
    _patch_suites(monkeypatch, [("synth-heldout", tasks, True), ("shell-core", tasks[:4], True)])
    monkeypatch.setattr("clawloop.transfer.train", lambda job, params, setup: {})
    monkeypatch.setattr("clawloop.core.rollout_settings.RolloutSettings.load_policy", lambda self, path, policy_id: policy_id)
    passes = {"transfer-first": set(range(3)), "transfer-final": set(range(1, 11))}  # 1 lost, 8 gained

    def fake_rollouts(ctx: Any, tasks: list[Task], policy: str, **kwargs: Any) -> list[EpisodeRecord]:
        return [EpisodeRecord(t.id, f"t{i}", kwargs["suite"], "files", 1, policy,
                              "passed" if i in passes[policy] and kwargs["suite"] == "synth-heldout" else "failed")
                for i, t in enumerate(tasks)]

    monkeypatch.setattr("clawloop.core.rollout_settings.RolloutSettings.rollouts", fake_rollouts)
    monkeypatch.setattr(sys, "argv", ["stages/transfer.py", "--base", str(tmp_path), "--first", str(validated),
                                      "--final", str(validated), "--out", str(tmp_path / "transfer")])
    importlib.import_module("stages.transfer").main(params)
    out = json.loads((tmp_path / "transfer" / "transfer.json").read_text())
    row = out["paired"]["synth-heldout"]
    assert (row["tasks"], row["gained"], row["lost"]) == (12, 8, 1)
    assert row["before"] == pytest.approx(3 / 12, abs=1e-4) and row["after"] == pytest.approx(10 / 12, abs=1e-4)
    assert row["p_mcnemar"] == pytest.approx(2 * 10 / 2**9, abs=1e-6)  # 9 flips, 1 against: 2 * (1 + 9) / 512
    assert row["diff_low"] <= row["diff"] <= row["diff_high"]
    # pooled over the 16 held-out tasks, as metrics.json's held-out pass@1 is (not the mean of the suites' rates)
    assert out["pass_at_1"] == pytest.approx({"first": 3 / 16, "final": 10 / 16}) and out["gain"] == pytest.approx(7 / 16)


def test_the_diagnose_stage_refuses_the_narrative_it_cannot_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """diagnosis.options.narrative needs a policy the stage never loads: a clear error, not a silent no-op."""
    import importlib

    params = _params(tmp_path, lambda r: r["diagnosis"].setdefault("options", {}).update(narrative=True))
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setattr(sys, "argv", ["stages/diagnose.py", "--iteration", "1", "--eval", str(tmp_path),
                                      "--out", str(tmp_path / "diagnosis")])
    with pytest.raises(ClawloopError, match=r"diagnosis\.options\.narrative: the diagnose stage loads no policy"):
        importlib.import_module("stages.diagnose").main(params)
    assert not (tmp_path / "diagnosis").exists()


@pytest.mark.parametrize(("jobs", "expected"), [(None, 6), (5, 5)])
def test_agent_free_validation_runs_twice_the_sandbox_jobs_unless_told(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int | None, expected: int) -> None:
    """A check waits on the kernel between its containers: `validation.jobs` (default 2 x sandbox.jobs)."""
    from clawloop.phases.validate.validate import check_pool

    params = _params(tmp_path, lambda r: (r["sandbox"].update(jobs=3), r["validation"].update(jobs=jobs)))
    seen: list[int] = []
    monkeypatch.setattr("clawloop.phases.validate.validate.validate_pool", lambda tasks, backend, j, *a, **k: (
        seen.append(j), ([], {"input": 0, "rejected": {}, "tasks_per_s": 0.0}))[1])
    pool = tmp_path / "pool.jsonl"
    pool.write_text("")
    from clawloop.core.rollout_settings import rollout_settings

    check_pool(params, rollout_settings(params), pool, None)
    assert seen == [expected]
