"""report.html and report.md from templates: the data decides what is said, the templates how."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from clawloop.core.paired import format_p
from clawloop.report.ablations import KNOBS
from clawloop.report.collect import baselines, chain, evidence, sampled, summary

_TEMPLATES = Path(__file__).parent / "templates"


def ci(x: dict[str, Any] | None) -> str:
    """'0.420 [0.310, 0.540]': a rate with its interval (the rate alone where none is known)."""
    if not x:
        return ""
    if x.get("low") is None:
        return f"{x['rate']:.3f}"
    return f"{x['rate']:.3f} [{x['low']:.3f}, {x['high']:.3f}]"


def walltime(row: dict[str, Any]) -> str:
    """Recorded phase times, and the whole iteration from file times where known."""
    parts = [f"{k} {_dur(v)}" for k, v in row.get("wall", {}).items()]
    if row.get("elapsed"):
        parts.insert(0, f"{_dur(row['elapsed'])} in all")
    return ", ".join(parts)


def _dur(s: float) -> str:
    return f"{s / 60:.1f} min" if s >= 90 else f"{s:.0f} s"


def context(data: dict[str, Any], images: dict[str, bytes], *, viewer: str | None,
            ablations: list[dict[str, Any]]) -> dict[str, Any]:
    """What both templates draw from."""
    return {
        "s": summary(data), "e": evidence(data), "sampled": sampled(data), "published": baselines(data), "chain": chain(data),
        "iterations": data["iterations"],
        "skills": sorted(data["skills"].items()), "modes": sorted(data["modes"].items()),
        "pools": sorted(data["pools"].items()), "suites": sorted(data["suites"].items()),
        "drift": sorted(data.get("drift", {}).items()),
        "transfer": data.get("transfer"), "learned": sorted(data.get("learned", {}).items()), "ablations": ablations, "ablation_keys": KNOBS, "viewer": viewer,
        "image_names": sorted(images),
        "images": {k: "data:image/png;base64," + base64.b64encode(v).decode("ascii") for k, v in images.items()},
        "ci": ci, "walltime": walltime, "p": format_p,
    }


def render(ctx: dict[str, Any]) -> tuple[str, str]:
    """(report.html, report.md)."""
    import jinja2

    html = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True)
    md = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=False,
                            keep_trailing_newline=True)
    return html.get_template("report.html.j2").render(ctx), md.get_template("report.md.j2").render(ctx)
