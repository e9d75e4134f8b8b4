"""`clawloop train`: SFT and/or multi-turn GRPO from a base checkpoint into a new checkpoint dir."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from clawloop.commands import app, parse_sets
from clawloop.commands.out import check_out
from clawloop.config.params import LOOP_TRAIN, SandboxParams
from clawloop.config.train import TrainParams, field_help, load_section, merge
from clawloop.core.executor import executor_params
from clawloop.errors import ClawloopError
from clawloop.phases.train.jobs import EpisodeSetup, TrainJob
from clawloop.phases.train.jobs import train as run_training


def _sandbox_section(params: Path | None) -> dict:
    """params.yaml's `sandbox` section ({} without --params or without the section)."""
    out = _section(params, "sandbox")
    return out if isinstance(out, dict) else {}


def _section(params: Path | None, name: str) -> Any:
    """A top-level section of params.yaml, as written (None without --params or without the section)."""
    if params is None:
        return None
    try:
        return load_section(params, None).get(name)
    except ClawloopError:
        return None


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
    params: Path | None = typer.Option(None, "--params", help="params.yaml to read the knobs from."),
    section: str = typer.Option("train", "--section", help="Dotted section of --params, e.g. train or loop.train."),
    profile: str | None = typer.Option(None, "--profile", help="Defaults to start from: cpu | gpu (default: params.yaml's train recipe without --params)."),
    sets: list[str] = typer.Option([], "--set", help="Override a knob, e.g. --set sft.max_steps=50. Repeatable."),
    logs: Path | None = typer.Option(None, "--logs", help="DVCLive directory for per-step metrics."),
    backend: str | None = typer.Option(
        None, "--backend", help="Sandbox of reference trajectories and GRPO: bwrap | docker | local "
        "(default: sandbox.backend of --params, else params.yaml's default, bwrap)."),
    jobs: int | None = typer.Option(
        None, "--jobs", min=1, help="Reference trajectories run in parallel (default: sandbox.jobs of --params, else params.yaml's default, 2)."),
    executor: str | None = typer.Option(
        None, "--executor", help="Where reference trajectories run: local (--jobs threads) or ray (Ray tasks, one "
        "CPU each; clawloop.core.executor). Default: the executor section of --params, else local."),
    help_params: bool = typer.Option(False, "--help-params", help="List every knob with its default and exit."),
) -> None:
    """Fine-tune a checkpoint on the task pool: SFT on successful trajectories, GRPO on the verifier."""
    overrides = parse_sets(sets)
    if profile is not None:
        overrides["profile"] = profile
    if params is not None:
        values = load_section(params, section or None)
        method = method or values.pop("method", None)  # params.yaml's train section carries it
        values.pop("method", None)
        p = TrainParams.from_mapping(merge(values, overrides), where=f"{params}: {section}")
    else:  # params.yaml's defaults (the schema's), unless --profile starts from a profile's
        p = TrainParams.from_mapping(overrides if profile is not None else merge(LOOP_TRAIN, overrides), where="--set")
    if help_params:
        for name, value, text in field_help(p):
            typer.echo(f"{name:34s} {value:10s} {text}")
        raise typer.Exit()
    for flag, value in (("--base", base), ("--tasks", tasks), ("--out", out)):
        if value is None:
            raise ClawloopError(f"{flag}: required")
    check_out(out, "dir")  # an existing one is the work directory a run resumes from
    sandbox = _sandbox_section(params)
    setup = EpisodeSetup(backend=backend or sandbox.get("backend", SandboxParams().backend), jobs=jobs or sandbox.get("jobs", SandboxParams().jobs),
                         executor=executor_params(executor if executor is not None else _section(params, "executor")))
    job = TrainJob(method or "sft", base, tasks, out, trajectories=trajectories, probe=probe, logs=logs)
    metrics = run_training(job, p, setup)
    typer.echo(json.dumps(metrics, sort_keys=True))
    typer.echo(f"wrote {out}")
