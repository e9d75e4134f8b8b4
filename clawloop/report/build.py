"""`clawloop report`: the loop's story as report.html / report.md, plots, DVC plot tables, trajectories.

The first screen answers "did the agent get better, and how sure are we" (best iteration,
held-out pass@1 with Wilson intervals, gain over iteration 0, the gate); then the closed loop
itself: what each diagnosis recommended and what the next synthesis did with it; then skills,
failure modes, pools, transfer and ablations. Every episode behind those numbers is readable in
the trajectory viewer written beside the report (`trajectories/index.html`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clawloop.core.io import write_bytes, write_text
from clawloop.report import ablations
from clawloop.report.collect import collect
from clawloop.report.plots import draw
from clawloop.report.render import context, render
from clawloop.viewer import expand_sources, write_viewer

__all__ = ["collect", "draw", "write_report"]

VIEWER_DIR = "trajectories"


def _csv(data: dict[str, Any]) -> dict[str, str]:
    """Tables for `dvc plots`: pass@1 per suite and held-out, pass rate per skill, with intervals."""
    rows = ["iteration,suite,pass_at_1,ci_low,ci_high"]
    for i, h in sorted(data["heldout"].items()):
        rows.append(f"{i},heldout,{h['rate']:.4f},{h['low']:.4f},{h['high']:.4f}")
    for suite, by_iter in sorted(data["suites"].items()):
        rows += [f"{i},{suite},{by_iter[i]:.4f},," for i in sorted(by_iter)]
    skills = ["iteration,skill,pass_rate,ci_low,ci_high,episodes"]
    for skill, by_iter in sorted(data["skills"].items()):
        skills += [f"{i},{skill},{r['rate']:.4f},{r['low']:.4f},{r['high']:.4f},{r['n']}" for i, r in sorted(by_iter.items())]
    return {"pass_rate.csv": "\n".join(rows) + "\n", "skills.csv": "\n".join(skills) + "\n"}


def write_report(runs: str | Path, out: str | Path, *, viewer: bool = True, ablations_from: str | Path | None = None,
                 ablation_clones: list[str | Path] = ()) -> Path:
    """Write report.md, report.html, the PNG plots, DVC plot CSVs and the trajectory viewer into `out`.

    `ablations_from`: a DVC repository whose `dvc exp show` lists ablations (None: the one
    `runs` lies in, if any); `ablation_clones`: repositories where a variant ran in a clone of its own.
    """
    runs, out = Path(runs), Path(out)
    clone_rows = ablations.from_clones(list(ablation_clones))  # a bad one fails before anything is written
    data = collect(runs)
    images = draw(data)
    for name, png in images.items():
        write_bytes(out / name, png)
    link = None
    if viewer:
        sources = expand_sources([runs])
        if sources:
            write_viewer(sources, out / VIEWER_DIR, title="clawloop trajectories")
            link = f"{VIEWER_DIR}/index.html"
    repo = Path(ablations_from) if ablations_from else runs.resolve().parent
    rows = ablations.read(repo) if (repo / "dvc.yaml").exists() else []
    if clone_rows and not rows:  # the variants compare against this run: its own row first
        rows = ablations.this_run(repo)
    rows += clone_rows
    html, md = render(context(data, images, viewer=link, ablations=rows))
    write_text(out / "report.md", md)
    write_text(out / "report.html", html)
    for name, text in _csv(data).items():
        write_text(out / name, text)
    return out / "report.html"
