"""One Params for every command (#77 item 1): the command line states no default of its own where
the schema (clawloop.config.params) has one; `clawloop eval --agent model` and `clawloop tasks probe`
roll out as the evaluate and validate stages do (clawloop.core.rollout_settings); `clawloop train`
reads ./params.yaml as the train stage does, and every such command says which params it used."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from pydantic import BaseModel

from clawloop.cli import app, main
from clawloop.config.params import Params, RolloutParams
from clawloop.core.agent.harness import ROLLOUT_FIELDS, HarnessConfig
from clawloop.core.agent.playbook import POLICY_FILE, Playbook, PlaybookEntry, write_playbook
from clawloop.core.rollout_settings import rollout_settings

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "tests" / "fixtures" / "harbor" / "word-count"

SECTIONS: dict[str, list[str]] = {
    "eval": ["sandbox", "eval", "rollout"],
    "train": ["sandbox", "train"],
    "tasks probe": ["sandbox", "validation.probe", "rollout"],
}
"""Where each command's options find their schema counterpart: an option named as a field of one of
these sections (the first that has it: `--backend` is the sandbox's) is that field."""

EXPECTED = {("eval", "backend"), ("eval", "jobs"), ("eval", "samples"), ("eval", "batch"), ("eval", "temperature"),
            ("train", "backend"), ("train", "jobs"), ("train", "method"), ("train", "profile"),
            ("tasks probe", "k"), ("tasks probe", "temperature"), ("tasks probe", "batch"), ("tasks probe", "backend")}


def _section(path: str) -> BaseModel:
    node: Any = Params()
    for part in path.split("."):
        node = getattr(node, part)
    return node


def _command(path: str) -> Any:
    cmd: Any = typer.main.get_command(app)
    for word in path.split():
        cmd = cmd.commands[word]
    return cmd


def counterparts() -> list[tuple[str, str, Any, str, Any]]:
    """(command, option, its default, schema leaf, the schema's default) for every option that has one."""
    out = []
    for command, sections in SECTIONS.items():
        for param in _command(command).params:
            if param.param_type_name != "option":
                continue
            for section in sections:
                model = _section(section)
                if param.name in type(model).model_fields:
                    out.append((command, param.name, param.default, f"{section}.{param.name}",
                                getattr(model, param.name)))
                    break
    return out


def test_no_cli_default_differs_from_the_schema() -> None:
    """A default is None (the command's Params decide) or the schema's own value."""
    found = counterparts()
    assert {(c, o) for c, o, *_ in found} >= EXPECTED, found  # the introspection still sees them
    wrong = [f"clawloop {c} --{o}: default {d!r}, schema {leaf} {want!r}"
             for c, o, d, leaf, want in found if d is not None and d != want]
    assert not wrong, "\n".join(wrong)


def test_the_harness_defaults_are_the_schemas() -> None:
    schema = RolloutParams()
    assert {f: getattr(HarnessConfig(), f) for f in ROLLOUT_FIELDS} == {f: getattr(schema, f) for f in ROLLOUT_FIELDS}
    assert HarnessConfig.of_rollout(schema) == HarnessConfig() == rollout_settings(Params()).harness
    shared = set(HarnessConfig.model_fields) & set(RolloutParams.model_fields)
    assert shared == set(ROLLOUT_FIELDS)  # a new shared knob is read from params.yaml too


# ------------------------------------------------------------------ one evaluation path
class _Stop(Exception):
    """Raised by the stubbed rollout once it has seen its config: no episode needs to run."""


def _params_file(tmp_path: Path) -> Path:
    """params.yaml with a harness and sampling other than the schema's, and one eval suite."""
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["rollout"].update(max_turns=3, max_format_errors=1, format_hint="short", submit_check=True,
                          temperature=0.5, max_new_tokens=77, batch=5, seed=9)
    raw["eval"]["suites"] = [{"name": "shell-core", "path": str(TASK)}]
    raw["sandbox"]["backend"] = "bwrap"
    path = tmp_path / "custom.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _model_dir(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    model.mkdir()
    tip = PlaybookEntry(id="t1", kind="tip", skill="text", failure_mode=None, text="use wc -w", added_iteration=1,
                        baseline=0.0)
    write_playbook(model / POLICY_FILE, Playbook(token_budget=100, entries=[tip]))
    return model


def _capture(monkeypatch: pytest.MonkeyPatch, module: Any, seen: list[Any]) -> None:
    def stop(tasks: Any, policy: Any, config: Any, **_: Any) -> Any:
        seen.append(config)
        raise _Stop

    monkeypatch.setattr(module, "run_rollouts", stop)


def _same(config: Any) -> tuple:
    return (config.k, config.batch_size, config.backend, config.harness, config.sampling, config.sandbox_config)


def test_eval_model_and_the_evaluate_stage_roll_out_alike(backend: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from scripted_policy import ScriptedPolicy

    from clawloop.config.params import load_params
    from clawloop.core import rollout_settings as settings_mod
    from clawloop.core.agent import model_agent
    from clawloop.phases.evaluate.evaluate import evaluate_iteration

    path, model = _params_file(tmp_path), _model_dir(tmp_path)
    seen: list[Any] = []
    monkeypatch.setattr(model_agent, "load_policy", lambda spec: ScriptedPolicy([]))
    monkeypatch.setattr(settings_mod.RolloutSettings, "load_policy", lambda self, path, policy_id: ScriptedPolicy([]))
    _capture(monkeypatch, model_agent, seen)
    _capture(monkeypatch, settings_mod, seen)
    with pytest.raises(_Stop):
        evaluate_iteration(load_params(path), iteration=1, checkpoint=model, out=tmp_path / "iter-1" / "eval")
    monkeypatch.setattr(sys, "argv", ["clawloop", "eval", str(TASK), "--agent", "model", "--model", str(model),
                                      "--params", str(path), "--backend", backend])
    with pytest.raises(_Stop):
        main()
    stage, cli = seen
    assert _same(cli) == _same(stage)
    assert cli.harness.max_turns == 3 and cli.harness.format_hint == "short" and cli.harness.submit_check
    assert cli.harness.playbook is not None and cli.harness.playbook.entries[0].text == "use wc -w"
    assert (cli.sampling.temperature, cli.sampling.max_new_tokens, cli.sampling.seed, cli.batch_size) == (0.5, 77, 9, 5)


def test_eval_flags_override_the_params(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from scripted_policy import ScriptedPolicy

    from clawloop.core.agent import model_agent

    path, seen = _params_file(tmp_path), []
    monkeypatch.setattr(model_agent, "load_policy", lambda spec: ScriptedPolicy([]))
    _capture(monkeypatch, model_agent, seen)
    monkeypatch.setattr(sys, "argv", ["clawloop", "eval", str(TASK), "--agent", "model", "--model", "any",
                                      "--params", str(path), "--backend", backend, "--batch", "2",
                                      "--temperature", "0.25", "--samples", "3"])
    with pytest.raises(_Stop):
        main()
    (config,) = seen
    assert (config.batch_size, config.sampling.temperature, config.k, config.harness.max_turns) == (2, 0.25, 3, 3)
    assert f"[params] {path}" in capsys.readouterr().err.splitlines()


def test_tasks_probe_probes_as_the_validate_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from scripted_policy import ScriptedPolicy

    from clawloop.commands import tasks_cmd
    from clawloop.config.params import load_params
    from clawloop.core.tasks.harbor import load_harbor_task
    from clawloop.core.tasks.pool import write_pool

    path, model = _params_file(tmp_path), _model_dir(tmp_path)
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, [load_harbor_task(TASK)])
    seen: list[Any] = []
    monkeypatch.setattr(tasks_cmd, "load_policy", lambda spec: ScriptedPolicy([]))
    monkeypatch.setattr(tasks_cmd, "probe_tasks", lambda tasks, policy, config, **_: seen.append(config) or [])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(path.read_text())
    _ok(monkeypatch, ["clawloop", "tasks", "probe", str(pool), "--model", str(model), "--out", str(tmp_path / "probe.jsonl")])
    (config,) = seen
    params = load_params(path)
    ctx = rollout_settings(params)
    want = ctx.rollout_config(k=params.validation.probe.k, harness=ctx.harness_for(model),
                              sampling=ctx.sampling_at(params.validation.probe.temperature))
    assert _same(config) == _same(want)
    assert "[params] params.yaml" in capsys.readouterr().err.splitlines()


# ------------------------------------------------------------------ clawloop train reads params.yaml
def _ok(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    """Run a command line as the console script does; it must exit 0."""
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code in (0, None)


def _train_argv(tmp_path: Path, *extra: str) -> list[str]:
    return ["clawloop", "train", "--base", str(tmp_path / "base"), "--tasks", str(tmp_path / "pool.jsonl"),
            "--out", str(tmp_path / "ckpt"), *extra]


def test_train_without_params_uses_params_yaml_here_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from clawloop.commands import train_cmd

    seen: list[Any] = []
    monkeypatch.setattr(train_cmd, "run_training", lambda job, p, setup: seen.append((job, p, setup)) or {})
    monkeypatch.chdir(tmp_path)
    _ok(monkeypatch, _train_argv(tmp_path))  # no params.yaml here: the schema's, the loop's recipe (2e-5 on 12 layers), not a profile's
    assert "[params] schema defaults (no params.yaml here)" in capsys.readouterr().err.splitlines()
    job, p, setup = seen.pop()
    schema = Params()
    assert p.sft.learning_rate == schema.train.sft.learning_rate == 2e-5 and p.sft.trainable_layers == 12
    assert setup.harness_config == HarnessConfig() and (setup.backend, setup.jobs) == ("bwrap", schema.sandbox.jobs)

    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["train"]["sft"]["learning_rate"] = 7e-5
    raw["rollout"]["max_turns"], raw["sandbox"]["jobs"] = 3, 5
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    _ok(monkeypatch, _train_argv(tmp_path))
    assert "[params] params.yaml" in capsys.readouterr().err.splitlines()
    job, p, setup = seen.pop()
    assert p.sft.learning_rate == 7e-5 and p.sft.trainable_layers == 12 and job.method == raw["train"]["method"]
    assert setup.harness_config.max_turns == 3 and setup.jobs == 5  # the train stage's harness and sandboxes

    _ok(monkeypatch, _train_argv(tmp_path, "--jobs", "1", "--set", "sft.max_steps=3"))  # flags and --set override
    _, p, setup = seen.pop()
    assert setup.jobs == 1 and p.sft.max_steps == 3 and p.sft.learning_rate == 7e-5


def test_a_bad_params_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    def one_line(argv: list[str]) -> str:
        monkeypatch.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as e:
            main()
        lines = capsys.readouterr().err.strip().splitlines()
        assert e.value.code == 2 and len(lines) == 1, lines  # no `[params]` line before the error
        return lines[0]

    monkeypatch.chdir(tmp_path)
    model = ["clawloop", "eval", str(TASK), "--agent", "model", "--model", "any"]
    assert "hf.engin: unknown key" in one_line([*model, "--policy-set", "hf.engin=fast"])
    (tmp_path / "params.yaml").write_text("rollout: {max_turns: 0}\n")
    from clawloop.core.tasks.harbor import load_harbor_task
    from clawloop.core.tasks.pool import write_pool

    write_pool(tmp_path / "pool.jsonl", [load_harbor_task(TASK)])
    probe = ["clawloop", "tasks", "probe", str(tmp_path / "pool.jsonl"), "--model", "any", "--out", str(tmp_path / "p.jsonl")]
    for argv in (_train_argv(tmp_path), model, probe):
        line = one_line(argv)
        assert line.startswith("error: params.yaml: rollout.max_turns"), line
