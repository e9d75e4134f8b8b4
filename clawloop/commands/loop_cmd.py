"""`clawloop check`, `clawloop report` and `clawloop view`: the loop's artifacts, checked and shown."""

from pathlib import Path

import typer

from clawloop.check import check_path
from clawloop.commands import app
from clawloop.loop_report import write_report
from clawloop.progress import console
from clawloop.viewer import expand_sources, write_viewer


@app.command()
def check(path: Path = typer.Argument(Path("runs"), help="A runs/ tree, an iteration directory, or any "
                                      "single artifact (pool or probe JSONL, trajectory or diagnosis "
                                      "directory, checkpoint, metrics.json, ...).")) -> None:
    """Validate artifacts against their schemas, the check picked by content; exit 1 on any
    violation, 2 when PATH holds no clawloop artifact."""
    from rich.markup import escape
    from rich.table import Table

    findings = check_path(path)
    table = Table("artifact", "kind", "status")
    for f in findings:
        table.add_row(escape(str(f.path)), f.kind, "[green]ok[/]" if f.error is None else f"[red]{escape(f.error)}[/]")
    console().print(table)
    bad = [f for f in findings if f.error is not None]
    print(f"{len(findings) - len(bad)} artifacts valid, {len(bad)} invalid")
    if bad:
        raise typer.Exit(1)


@app.command()
def report(runs: Path = typer.Argument(Path("runs"), help="the pipeline's output directory"),
           out: Path = typer.Option(Path("runs/report"), help="where report.html/.md and plots go"),
           ablation: list[Path] = typer.Option([], help="a clone where a variant ran (its params.yaml and "
                                               "runs/): a row of the ablation table; repeatable")) -> None:
    """Write report.html and report.md with plots of the whole loop."""
    print(write_report(runs, out, ablation_clones=ablation))


@app.command()
def view(paths: list[Path] = typer.Argument(..., help="evaluation output: rollout dirs (Parquet), "
                                            "episodes.jsonl, or a loop's runs/ (one group per iteration)"),
         out: Path = typer.Option(Path("trajectories"), help="directory to write the viewer into")) -> None:
    """Write a static trajectory viewer (open OUT/index.html; works offline, no server)."""
    res = write_viewer(expand_sources(paths), out)
    print(f"{res['path']}: {res['episodes']} episodes in {len(res['groups'])} group(s)")
