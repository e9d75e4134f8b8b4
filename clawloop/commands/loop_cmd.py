"""`clawloop check`, `clawloop report`, `clawloop view` and `clawloop compare`: the loop's artifacts,
checked, shown and compared."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from clawloop.artifacts import IterDir
from clawloop.artifacts.check import PARAMS_SUFFIXES, check_params, check_path
from clawloop.commands import app
from clawloop.commands.out import check_out
from clawloop.core.progress import console
from clawloop.errors import ClawloopError, printable
from clawloop.report.build import write_report
from clawloop.viewer import expand_sources, write_viewer

if TYPE_CHECKING:
    from clawloop.artifacts.metrics import HeldoutRecord


@app.command()
def check(path: Path = typer.Argument(Path("runs"), help="A runs/ tree, an iteration directory, any "
                                      "single artifact (pool or probe JSONL, trajectory or diagnosis "
                                      "directory, checkpoint, metrics.json, ...), or a params file "
                                      "(params.yaml, profiles/smoke.yaml).")) -> None:
    """Validate artifacts against their schemas, the check picked by content, or a params file
    against the params schema (one line: OK, or the file and the leaf); exit 1 on any violation,
    2 when PATH holds no clawloop artifact."""
    from rich.markup import escape
    from rich.table import Table

    if path.suffix in PARAMS_SUFFIXES:
        try:
            print(check_params(path))
        except ClawloopError as e:
            print(f"error: {printable(e)}".splitlines()[0], file=sys.stderr)
            raise typer.Exit(1) from None
        return
    findings = check_path(path)
    table = Table("artifact", "kind", "status")
    for f in findings:
        table.add_row(escape(printable(f.path)), f.kind,
                      "[green]ok[/]" if f.error is None else f"[red]{escape(printable(f.error))}[/]")
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
    print(write_report(runs, check_out(out, "dir"), ablation_clones=ablation))


@app.command()
def view(paths: list[Path] = typer.Argument(..., help="evaluation output: rollout dirs (Parquet), "
                                            "episodes.jsonl, or a loop's runs/ (one group per iteration)"),
         out: Path = typer.Option(Path("trajectories"), help="directory to write the viewer into")) -> None:
    """Write a static trajectory viewer (open OUT/index.html; works offline, no server)."""
    res = write_viewer(expand_sources(paths), check_out(out, "dir"))
    print(f"{res['path']}: {res['episodes']} episodes in {len(res['groups'])} group(s)")


def _heldout(path: Path) -> HeldoutRecord:
    """The HeldoutRecord of an iteration directory or of its heldout.json."""
    from clawloop.artifacts.metrics import read_heldout

    return read_heldout(IterDir(path).heldout_json if path.is_dir() else path)


@app.command()
def compare(before: Path = typer.Argument(..., help="an iteration directory (runs/iter-N) or its heldout.json"),
            after: Path = typer.Argument(..., help="the same, for the evaluation compared against BEFORE"),
            json_out: bool = typer.Option(False, "--json", help="Print the comparisons as one JSON object."),
            tasks: bool = typer.Option(False, "--tasks", help="List the gained and lost tasks."),
            levels: bool = typer.Option(False, "--levels", help="Add a row per difficulty level for the suites "
                                        "whose tasks carry more than one (synth-heldout, shell-core); JSON: key `by_level`.")) -> None:
    """Paired held-out comparison of two evaluations on the same tasks, per suite and in all:
    pass counts, tasks gained and lost, the exact McNemar test and a paired-bootstrap interval.
    Works across runs and clones (e.g. a base re-evaluated under another harness)."""
    from rich.markup import escape
    from rich.table import Table

    from clawloop.core import paired

    first, second = _heldout(before), _heldout(after)
    res = paired.compare_suites(first.checkpoint, second.checkpoint)
    known = first.levels | second.levels
    # a suite graded in one run only has no paired task at any level: no table
    per_level = {name: got for name in res if name != "all" and res[name].paired
                 and len(got := paired.by_level(first.checkpoint, second.checkpoint, name, known)) > 1} if levels else {}
    if json_out:
        out = {k: c.to_dict() for k, c in res.items()}
        if levels:
            out["by_level"] = {name: {str(lv): c.to_dict() for lv, c in got.items()} for name, got in per_level.items()}
        typer.echo(json.dumps(out, sort_keys=True))
        return
    table = Table("suite", "paired", "before", "after", "gained", "lost", "McNemar p", "diff [95% CI]",
                  title=f"{escape(str(before))} → {escape(str(after))}")
    shown = [name for name, c in res.items() if c.paired or name == "all"]
    for name in shown:
        c, n = res[name], res[name].paired
        table.add_row(escape(printable(name)), str(n), f"{round(c.before_rate * n)}/{n}", f"{round(c.after_rate * n)}/{n}",
                      str(c.gained), str(c.lost), paired.format_p(c.p_two_sided),
                      f"{c.diff:+.3f} [{c.diff_low:+.3f}, {c.diff_high:+.3f}]", end_section=len(shown) > 1 and name == shown[-2])
    console().print(table)
    for name, got in per_level.items():
        rows = Table("level", "paired", "before", "after", "gained", "lost", "McNemar p", title=f"{escape(printable(name))} per level")
        for lv, c in got.items():
            n = c.paired
            rows.add_row(str(lv), str(n), f"{round(c.before_rate * n)}/{n}", f"{round(c.after_rate * n)}/{n}",
                         str(c.gained), str(c.lost), paired.format_p(c.p_two_sided))
        console().print(rows)
    unpaired = res["all"].unpaired
    if unpaired:
        alone = ", ".join(printable(name) for name in res if name not in shown)
        print(f"{unpaired} tasks graded in only one of the two (errors, skips{', suites: ' + alone if alone else ''}) "
              "are left out")
    if tasks:
        print("gained: " + (", ".join(map(printable, res["all"].gained_tasks)) or "none"))
        print("lost: " + (", ".join(map(printable, res["all"].lost_tasks)) or "none"))
