"""`clawloop diagnose` (capability report) and `clawloop tasks probe` (agent-based validation)."""

from __future__ import annotations

from pathlib import Path

import typer

from clawloop.artifacts.probe import summarize, write_probe
from clawloop.commands import app, loop_rollout, tasks_app
from clawloop.commands.out import check_out
from clawloop.config.diagnosis import DiagnosisParams
from clawloop.core.agent.harness import HarnessConfig
from clawloop.core.agent.rollout import RolloutConfig
from clawloop.core.tasks.pool import read_pool
from clawloop.phases.diagnose.diagnose import diagnose as write_diagnosis
from clawloop.phases.validate.probe import probe_tasks
from clawloop.policy.load import load_policy
from clawloop.policy.types import SamplingParams


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
    k: int = typer.Option(4, "--k", min=1, help="Rollouts per task."),
    backend: str | None = typer.Option(None, "--backend", help="Sandbox backend: bwrap, docker or local."),
    batch: int = typer.Option(32, "--batch", min=1, help="Episodes stepped in lockstep."),
    trajectories: Path | None = typer.Option(
        None, "--trajectories", help="Write the probe rollouts here (an empty directory; default: not kept)."),
    temperature: float = typer.Option(1.0, "--temperature", min=0.0, help="Sampling temperature."),
    iteration: int = typer.Option(-1, "--iteration", help="Loop iteration written into the trajectories."),
    params: Path | None = typer.Option(None, "--params", help="The params.yaml whose `rollout` section sets the "
                                       "harness and reply tokens (default: ./params.yaml when there is one)."),
    no_params: bool = typer.Option(False, "--no-params", help="The library's harness defaults, not ./params.yaml's."),
) -> None:
    """Label each task too_easy (k/k), learnable (0<p<k) or frontier (0/k) with the current policy."""
    check_out(out)
    if trajectories is not None:
        check_out(trajectories, "dir", run=True, flag="--trajectories")
    tasks = read_pool(pool)
    loop = loop_rollout(params, no_params)
    policy = load_policy(model)
    sampling = SamplingParams(temperature=temperature, **{k: loop[k] for k in ("max_new_tokens", "seed") if k in loop})
    probing = RolloutConfig(k=k, batch_size=batch, backend=backend or "bwrap", sampling=sampling, iteration=iteration,
                            harness=loop.get("harness") or HarnessConfig())
    results = probe_tasks(tasks, policy, probing, out_dir=trajectories, progress=True)
    write_probe(out, results)
    counts = summarize(results)
    typer.echo(f"probed {len(results)} tasks with k={k}: "
               + ", ".join(f"{label} {n}" for label, n in counts.items()) + f"; wrote {out}")
