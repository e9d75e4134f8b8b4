"""`clawloop diagnose`: an iteration's trajectories → its diagnosis (diagnosis.json, diagnosis.md, heatmap)."""

from __future__ import annotations

from pathlib import Path

import typer

from clawloop.commands import app, renamed
from clawloop.commands.out import check_out
from clawloop.config.diagnosis import DiagnosisParams
from clawloop.phases.diagnose.diagnose import DIAGNOSIS_NAME, MARKDOWN_NAME
from clawloop.phases.diagnose.diagnose import diagnose as write_diagnosis
from clawloop.policy.load import load_policy


@app.command()
def diagnose(
    trajectories: list[Path] = typer.Argument(..., help="Rollout directories (searched recursively) or Parquet parts."),
    out: Path = typer.Option(..., "--out", help="Directory for diagnosis.json, diagnosis.md and pass_rate.png."),
    previous_diagnosis: Path | None = typer.Option(None, "--previous-diagnosis", help="The previous iteration's "
                                                   "diagnosis.json (trends, regressions)."),
    old_previous: Path | None = typer.Option(None, "--previous", hidden=True, help="The old name of --previous-diagnosis."),
    pool: Path | None = typer.Option(None, "--pool", help="Pool JSONL for diversity figures and skills to expand."),
    iteration: int | None = typer.Option(None, "--iteration", help="Iteration number (default: the episodes' most common)."),
    threads: int | None = typer.Option(None, "--threads", help="DuckDB threads (default: all cores)."),
    narrative_model: str | None = typer.Option(
        None, "--narrative-model", help="Policy (DIR, vllm:DIR, openai:MODEL@URL) that writes a narrative; off by default."),
) -> None:
    """Diagnose an iteration's trajectories: pass rates, failure taxonomy, trends, recommendations."""
    previous = renamed(previous_diagnosis, old_previous, "--previous-diagnosis", "--previous", required=False)
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
    typer.echo(f"wrote {out / DIAGNOSIS_NAME}, {out / MARKDOWN_NAME}")
