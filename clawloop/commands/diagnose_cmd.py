"""`clawloop diagnose` (capability report) and `clawloop tasks probe` (agent-based validation)."""

from __future__ import annotations

from pathlib import Path

import typer

from clawloop.artifacts.probe import summarize, write_probe
from clawloop.commands import app, command_params, params_path, say_params, tasks_app
from clawloop.commands.out import check_out
from clawloop.config.diagnosis import DiagnosisParams
from clawloop.core.tasks.pool import read_pool
from clawloop.phases.diagnose.diagnose import diagnose as write_diagnosis
from clawloop.phases.validate.probe import probe_tasks
from clawloop.policy.load import load_policy


@app.command()
def diagnose(
    trajectories: list[Path] = typer.Argument(..., help="Rollout directories (searched recursively) or Parquet parts."),
    out: Path = typer.Option(..., "--out", help="Directory for diagnosis.json, report.md and pass_rate.png."),
    previous: Path | None = typer.Option(None, "--previous", help="The previous iteration's diagnosis.json (trends, regressions)."),
    pool: Path | None = typer.Option(None, "--pool", help="Pool JSONL for diversity figures and skills to expand."),
    iteration: int | None = typer.Option(None, "--iteration", help="Iteration number (default: the episodes' most common)."),
    threads: int | None = typer.Option(None, "--threads", help="DuckDB threads (default: all cores)."),
    narrative_model: str | None = typer.Option(
        None, "--narrative-model", help="Policy (DIR, vllm:DIR, openai:MODEL@URL) that writes a narrative; off by default."),
) -> None:
    """Diagnose an iteration's trajectories: pass rates, failure taxonomy, trends, recommendations."""
    check_out(out, "dir")
    params = DiagnosisParams(threads=threads, narrative=narrative_model is not None)
    policy = None
    if narrative_model is not None:
        policy = load_policy(narrative_model)
    report = write_diagnosis(trajectories, out_dir=out, previous=previous, pool=pool, iteration=iteration,
                             params=params, policy=policy)
    graded = report.outcomes.get("passed", 0) + report.outcomes.get("failed", 0)
    typer.echo(f"iteration {report.iteration}: {report.episodes} episodes, {graded} graded, "
               f"pass rate {report.pass_rate:.3f}")
    modes = sorted((m for m in report.failure_modes if m.count), key=lambda m: -m.count)[:5]
    if modes:
        typer.echo("top failure modes: " + ", ".join(f"{m.mode} {m.count}" for m in modes))
    if report.regressions:
        typer.echo("regressions: " + ", ".join(f"{g.skill}/L{g.level}" for g in report.regressions))
    typer.echo(f"wrote {out / 'diagnosis.json'}, {out / 'report.md'}")


@tasks_app.command()
def probe(
    pool: Path = typer.Argument(..., help="Pool JSONL to probe."),
    model: str = typer.Option(..., "--model", help="The current policy: DIR, vllm:DIR or openai:MODEL@URL."),
    out: Path = typer.Option(..., "--out", help="Probe table (JSONL of task_id, k, passes, errors, label)."),
    k: int | None = typer.Option(None, "--k", min=1, help="Rollouts per task (default: validation.probe.k of the params)."),
    backend: str | None = typer.Option(None, "--backend", help="Sandbox backend: bwrap, docker or local "
                                       "(default: sandbox.backend of the params)."),
    batch: int | None = typer.Option(None, "--batch", min=1, help="Episodes stepped in lockstep (default: "
                                     "rollout.batch of the params)."),
    trajectories: Path | None = typer.Option(
        None, "--trajectories", help="Write the probe rollouts here (an empty directory; default: not kept)."),
    temperature: float | None = typer.Option(None, "--temperature", min=0.0, help="Sampling temperature "
                                             "(default: validation.probe.temperature of the params)."),
    iteration: int = typer.Option(-1, "--iteration", help="Loop iteration written into the trajectories."),
    params: Path | None = typer.Option(None, "--params", help="The params.yaml whose `rollout` and `validation.probe` "
                                       "sections set the probe, as the validate stage's (default: ./params.yaml "
                                       "when there is one, else the schema's defaults)."),
    no_params: bool = typer.Option(False, "--no-params", help="The schema's defaults, not ./params.yaml."),
) -> None:
    """Label each task too_easy (k/k), learnable (0<p<k) or frontier (0/k) with the current policy, as
    the validate stage's probe does (one Params: clawloop.core.rollout_settings)."""
    check_out(out)
    if trajectories is not None:
        check_out(trajectories, "dir", run=True, flag="--trajectories")
    tasks = read_pool(pool)
    from clawloop.core.rollout_settings import rollout_settings

    loop = command_params(params, no_params, batch=batch)
    ctx, probe_params = rollout_settings(loop), loop.validation.probe
    k = k or probe_params.k
    spec = ctx.policy_spec(model)
    say_params(params_path(params, no_params), no_params)
    policy = load_policy(spec)
    probing = ctx.rollout_config(k=k, harness=ctx.harness_of(spec),
                                 sampling=ctx.sampling_at(probe_params.temperature if temperature is None else temperature),
                                 iteration=iteration, suite="probe", backend=backend or ctx.backend)
    results = probe_tasks(tasks, policy, probing, out_dir=trajectories, progress=True)
    write_probe(out, results)
    counts = summarize(results)
    typer.echo(f"probed {len(results)} tasks with k={k}: "
               + ", ".join(f"{label} {n}" for label, n in counts.items()) + f"; wrote {out}")
