"""`clawloop train`: SFT and/or multi-turn GRPO from a base checkpoint into a new checkpoint dir."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer

from clawloop.commands import app, params_path, parse_sets, say_params
from clawloop.commands.out import check_out
from clawloop.config.params import LOOP_TRAIN, Params, load_params
from clawloop.config.train import TrainParams, field_help, load_section, merge
from clawloop.core.executor import executor_params
from clawloop.errors import ClawloopError, validated
from clawloop.phases.train.jobs import METHODS, EpisodeSetup, TrainJob
from clawloop.phases.train.jobs import train as run_training


def _loop_params(path: Path | None, section: str) -> Params:
    """The Params whose `sandbox`, `executor` and `rollout` (the harness training renders) the training
    runs on: the whole file when its `train` section is read (a params.yaml, validated), else the
    file's sandbox, executor and rollout sections; the schema's defaults without a file."""
    if path is None:
        return Params()
    if section == "train":
        return load_params(path)
    raw = load_section(path, None)
    return validated(Params, {k: raw[k] for k in ("sandbox", "executor", "rollout") if k in raw}, str(path))


def _train_values(path: Path, section: str) -> dict[str, Any]:
    """The file's train section as written; a params.yaml without one trains the schema's `train`."""
    if section == "train" and "train" not in load_section(path, None):
        return dict(LOOP_TRAIN)
    return load_section(path, section or None)


def _say(path: Path | None, profile: str | None) -> None:
    if path is None and profile is not None:
        typer.echo(f"[params] schema defaults; train: the {profile} profile's (--profile)", err=True)
    else:
        say_params(path)


@app.command()
def train(
    method: str | None = typer.Option(
        None, "--method", help="sft | grpo | sft+grpo (default: the section's `method`, else sft)."),
    base: Path | None = typer.Option(None, "--base", help="Checkpoint directory to start from (weights + tokenizer)."),
    tasks: Path | None = typer.Option(None, "--tasks", help="Validated pool JSONL (reference solutions, GRPO tasks)."),
    trajectories: list[Path] = typer.Option(
        [], "--trajectories", help="Rollout dir or episodes*.parquet; passed episodes join SFT. Repeatable."),
    probe: Path | None = typer.Option(
        None, "--probe", help="Probe table: SFT on learnable/frontier tasks, GRPO on learnable ones."),
    out: Path | None = typer.Option(None, "--out", help="Output checkpoint directory (written atomically)."),
    params: Path | None = typer.Option(None, "--params", help="params.yaml to read the knobs from (default: "
                                       "./params.yaml when there is one and no --profile, else the schema's defaults): "
                                       "its train section, and the sandbox and rollout harness the train stage uses."),
    section: str = typer.Option("train", "--section", help="Dotted section of --params, e.g. train or loop.train."),
    profile: str | None = typer.Option(None, "--profile", help="Start from this profile's defaults, cpu | gpu, not ./params.yaml's train section (with "
        "--params: that section's values on top of them)."),
    sets: list[str] = typer.Option([], "--set", help="Override a knob, e.g. --set sft.max_steps=50. Repeatable."),
    logs: Path | None = typer.Option(None, "--logs", help="DVCLive directory for per-step metrics."),
    backend: str | None = typer.Option(
        None, "--backend", help="Sandbox of reference trajectories and GRPO: bwrap | docker | local "
        "(default: sandbox.backend of the params)."),
    jobs: int | None = typer.Option(
        None, "--jobs", min=1, help="Reference trajectories run in parallel (default: sandbox.jobs of the params)."),
    executor: str | None = typer.Option(
        None, "--executor", help="Where reference trajectories run: local (--jobs threads) or ray (Ray tasks, one "
        "CPU each; clawloop.core.executor). Default: the executor section of the params."),
    help_params: bool = typer.Option(False, "--help-params", help="List every knob with its default and exit."),
) -> None:
    """Fine-tune a checkpoint on the task pool: SFT on successful trajectories, GRPO on the verifier.
    Runs on one Params, as the train stage does (its sandbox, executor and rollout harness)."""
    overrides = parse_sets(sets)
    if profile is not None:
        overrides["profile"] = profile
    path = params if params is not None or profile is not None else params_path(None)
    loop = _loop_params(path, section)
    if path is not None:
        values = _train_values(path, section)
        written = values.pop("method", None)  # params.yaml's train section carries it
        values.pop("drift", None)  # ... and what the train stage measures after training (#76)
        if method is None and written is not None and written not in METHODS:
            raise ClawloopError(f"{path}: {section}.method: {written} is a loop method (the train stage's); "
                                f"clawloop train runs {' | '.join(METHODS)}: give --method")
        method = method or written
        p = TrainParams.from_mapping(merge(values, overrides), where=f"{path}: {section}")
    else:  # the schema's train recipe, unless --profile starts from a profile's defaults
        p = TrainParams.from_mapping(overrides if profile is not None else merge(LOOP_TRAIN, overrides), where="--set")
    if help_params:
        _say(path, profile)
        for name, value, text in field_help(p):
            typer.echo(f"{name:34s} {value:10s} {text}")
        raise typer.Exit()
    for flag, value in (("--base", base), ("--tasks", tasks), ("--out", out)):
        if value is None:
            raise ClawloopError(f"{flag}: required")
    check_out(out, "dir")  # an existing one is the work directory a run resumes from
    from clawloop.core.rollout_settings import rollout_settings

    setup = EpisodeSetup.of_loop(rollout_settings(loop), executor_params(executor if executor is not None
                                                                         else loop.executor))
    setup = replace(setup, **{k: v for k, v in (("backend", backend), ("jobs", jobs)) if v is not None})
    _say(path, profile)
    job = TrainJob(method or "sft", base, tasks, out, trajectories=trajectories, probe=probe, logs=logs)
    metrics = run_training(job, p, setup)
    typer.echo(json.dumps(metrics, sort_keys=True))
    typer.echo(f"wrote {out}")
