"""`clawloop tasks schema|import|export|validate` and `clawloop eval`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from clawloop.commands import app, tasks_app

_BACKEND_HELP = "Sandbox backend: bwrap (isolated, default), docker, or local (NOT isolated)."


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def _progress(label: str) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=_stderr_console())


@tasks_app.command()
def schema() -> None:
    """Print the JSON Schema of one pool line (a Task)."""
    from clawloop.tasks.model import Task

    s = Task.model_json_schema(mode="validation")
    s.setdefault("properties", {})["id"] = {
        "type": "string", "readOnly": True,
        "description": "sha256 of the content fields (16 hex digits); checked when present."}
    typer.echo(json.dumps(s, indent=2, sort_keys=True))


@tasks_app.command("import")
def import_(
    src: Path = typer.Argument(..., help="A Harbor (or Terminal-Bench 1) task directory, or a directory of them."),
    out: Path = typer.Option(..., "--out", help="Pool JSONL to write."),
    source: str | None = typer.Option(None, "--source", help="Suite name recorded in each task (default: the directory's)."),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="Write the tasks that load even if others do not."),
) -> None:
    """Import Harbor task directories into a JSONL pool."""
    from clawloop.errors import ClawloopError
    from clawloop.evaluation import load_suite
    from clawloop.tasks.pool import write_pool

    if not src.is_dir():
        raise ClawloopError(f"{src}: not a directory")
    suite = load_suite(src, name=source)
    bad = [i for i in suite.items if i.task is None]
    for i in bad:
        typer.echo(f"error: {i.error}", err=True)
    if bad and not skip_bad:
        raise ClawloopError(f"{len(bad)} of {len(suite.items)} tasks failed to load; nothing written (--skip-bad)")
    n = write_pool(out, suite.tasks)
    skipped = sum(1 for t in suite.tasks if t.needs_image)
    typer.echo(f"wrote {n} tasks to {out}" + (f" ({skipped} need their Docker image)" if skipped else ""))


@tasks_app.command()
def export(
    pool: Path = typer.Argument(..., help="Pool JSONL."),
    out: Path = typer.Option(..., "--out", help="Directory to write one Harbor task directory per task into."),
) -> None:
    """Export a JSONL pool as Harbor task directories."""
    from clawloop.tasks.harbor import export_tasks
    from clawloop.tasks.pool import read_pool

    paths = export_tasks(read_pool(pool), out)
    typer.echo(f"wrote {len(paths)} task directories under {out}")


@tasks_app.command()
def validate(
    pool: Path = typer.Argument(..., help="Pool JSONL to validate."),
    out: Path = typer.Option(..., "--out", help="JSONL of the tasks kept."),
    report: Path = typer.Option(..., "--report", help="JSON report: rejections per reason with example ids."),
    backend: str = typer.Option("bwrap", "--backend", help=_BACKEND_HELP),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Sandboxes in parallel."),
    heldout: list[Path] | None = typer.Option(
        None, "--heldout", help="Held-out suite (repeatable; default: every Harbor task under benchmarks/)."),
    no_heldout: bool = typer.Option(False, "--no-heldout", help="Skip the held-out overlap check."),
    near_duplicate_threshold: float = typer.Option(0.9, "--near-duplicate-threshold", min=0.0, max=1.0),
    heldout_threshold: float = typer.Option(0.3, "--heldout-threshold", min=0.0, max=1.0,
                                            help="Share of a task's instruction 8-grams seen held-out that rejects it."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as one JSON line last."),
) -> None:
    """Agent-free validation: oracle passes, no-op fails, deterministic, no duplicates, no held-out overlap."""
    from clawloop.io import write_json
    from clawloop.tasks.pool import read_pool_lenient, write_pool
    from clawloop.validation.agent_free import AgentFreeParams, default_heldout, load_heldout, validate_pool

    tasks, parse_errors = read_pool_lenient(pool)
    for err in parse_errors:
        typer.echo(f"error: {err}", err=True)
    held = [] if no_heldout else load_heldout(heldout if heldout else default_heldout())
    params = AgentFreeParams(near_duplicate_threshold=near_duplicate_threshold,
                             heldout_threshold=heldout_threshold)
    with _progress("validating") as prog:
        bar = prog.add_task("validate", total=len(tasks))
        kept, rep = validate_pool(tasks, backend, jobs, held, params, parse_errors=parse_errors,
                                  on_done=lambda n: prog.advance(bar, n))
        prog.update(bar, completed=len(tasks))
    rep["heldout_tasks"] = len(held)
    write_pool(out, kept)
    write_json(report, rep)
    rejected = ", ".join(f"{k} {v}" for k, v in rep["rejected"].items()) or "none"
    typer.echo(f"kept {rep['kept']} of {rep['input']} tasks ({rep['tasks_per_s']} tasks/s); rejected: {rejected}")
    if json_out:
        typer.echo(json.dumps(rep, sort_keys=True))


@app.command("eval")
def eval_(
    suites: list[Path] = typer.Argument(..., help="Suites: a directory of Harbor tasks, one task directory, or a JSONL pool."),
    agent: str = typer.Option("oracle", "--agent", help="oracle | noop | model"),
    model: str | None = typer.Option(None, "--model", help="Policy for --agent model (DIR, vllm:DIR, openai:MODEL@URL)."),
    backend: str = typer.Option("bwrap", "--backend", help=_BACKEND_HELP),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Episodes in parallel."),
    out: Path | None = typer.Option(None, "--out", help="Write one JSON line per episode here "
                                    "(--agent model: a directory for the Parquet trajectories and episodes.jsonl)."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as one JSON line last."),
    samples: int = typer.Option(1, "--samples", "-k", min=1, help="--agent model: episodes per task."),
    batch: int = typer.Option(32, "--batch", min=1, help="--agent model: episodes stepped in lockstep."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="--agent model: sampling temperature."),
    # --- formats hook (issue #10): benchmark layouts (clawloop.tasks.formats)
    fmt: str = typer.Option("auto", "--format", help="auto | harbor | jsonl | clawgym | claw-eval-live."),
    grader_root: Path | None = typer.Option(None, "--grader-root", help="claw-eval-live: a checkout of the "
                                            "benchmark whose package grades its tasks (else $CLAWLOOP_GRADER_ROOT)."),
    skills: str | None = typer.Option(None, "--skills", help="Harbor/SkillsBench: on | off (with or without "
                                      "environment/skills; default: as the Dockerfile says)."),
    # --- end formats hook
) -> None:
    """Run an agent on task suites and report pass rates per suite and skill (errors are not failures)."""
    from clawloop.evaluation import evaluate
    from clawloop.io import write_jsonl

    options: dict[str, Any] = {"model": model} if model else {}
    if agent == "model":  # the model agent's knobs (clawloop.agent.rollout.run_model_agent)
        options.update(samples=samples, batch=batch, temperature=temperature, out_dir=out)
        out = out / "episodes.jsonl" if out is not None else None
    with _progress(f"eval {agent}") as prog:
        bar = prog.add_task("eval", total=None)
        records, summary = evaluate(
            suites, agent, backend=backend, jobs=jobs, options=options, fmt=fmt,
            format_options={"grader_root": grader_root, "skills": skills},  # formats hook (issue #10)
            on_total=lambda n: prog.update(bar, total=n * (samples if agent == "model" else 1)), on_done=lambda r: prog.advance(bar))
    if out is not None:
        write_jsonl(out, (r.to_json() for r in records))
    _print_summary(summary)
    for name, c in summary["suites"].items():  # formats hook (issue #10): fractional scores
        if "mean_score" in c:
            typer.echo(f"{name}: mean score {c['mean_score']:.3f}, full score {c['full_score_rate']:.3f}")
    if json_out:
        sys.stdout.flush()
        typer.echo(json.dumps(summary, sort_keys=True))


def _print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{summary['agent']} on {summary['backend']}")
    for col in ("skill", "tasks", "passed", "failed", "errors", "skipped", "pass rate"):
        table.add_column(col, justify="left" if col == "skill" else "right")
    rows = [(k, v) for k, v in summary["skills"].items()] + [("total", summary)]
    for name, c in rows:
        table.add_row(name, *(str(c[k]) for k in ("tasks", "passed", "failed", "errors", "skipped")),
                      f"{c['pass_rate']:.3f}", end_section=name == rows[-2][0] if len(rows) > 1 else False)
    console = Console()
    console.print(table)
    for kind, color in (("errors_detail", "red"), ("skipped_detail", "yellow")):
        for e in summary[kind][:10]:
            console.print(f"[{color}]{kind.split('_')[0]}[/{color}] {escape(str(e['suite']))}/"
                          f"{escape(str(e['task']))}: {escape(str(e['reason']))}", highlight=False)
