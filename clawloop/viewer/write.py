"""The trajectory viewer: a static site (index.html + data/*.js) that reads offline from its files.

Why scripts and not JSON: a page opened from disk (file://) may not fetch() its neighbours, but
it may load <script> files, so the data is wrapped in calls (`CLAWLOOP_VIEWER.index(...)`,
`CLAWLOOP_VIEWER.chunk(...)`). The index holds only what the episode list filters on; the
transcripts live in chunks of CHUNK_SIZE episodes that load when an episode is opened, so the
page stays light for large runs. No server, no network, nothing to install.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clawloop.errors import ClawloopError
from clawloop.io import write_text
from clawloop.viewer.load import SUMMARY_KEYS, load_episodes

CHUNK_SIZE = 100
"""Episodes per transcript file: a chunk of a 3-turn run weighs ~100-300 kB."""

_TEMPLATES = Path(__file__).parent / "templates"


def _js(call: str, *args: Any) -> str:
    payload = ", ".join(json.dumps(a, ensure_ascii=False, separators=(",", ":")) for a in args)
    return f"CLAWLOOP_VIEWER.{call}({payload});\n"


def render_page(title: str) -> str:
    """index.html from the template (CSS and JS inlined: one file to open, nothing to fetch)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True)
    return env.get_template("viewer.html.j2").render(title=title)


def expand_sources(paths: Sequence[str | Path]) -> list[tuple[str, Path]]:
    """(group label, directory) pairs: a loop's runs/ directory becomes one group per iteration."""
    out: list[tuple[str, Path]] = []
    for raw in paths:
        path = Path(raw)
        iters = sorted((int(m.group(1)), d) for d in path.glob("iter-*")
                       if (m := re.fullmatch(r"iter-(\d+)", d.name)) and d.is_dir()) if path.is_dir() else []
        if iters:
            out += [(f"iteration {i}", d / "eval") for i, d in iters if (d / "eval").is_dir()]
        else:
            out.append((path.name or str(path), path))
    return out


def write_viewer(sources: Sequence[tuple[str, str | Path]], out: str | Path, title: str = "clawloop trajectories",
                 ) -> dict[str, Any]:
    """Write the viewer for `sources` ((group label, eval dir or file) pairs) into `out`.

    Returns counts ({"episodes": n, "chunks": m, "groups": [...]}) for the caller to print.
    """
    out = Path(out)
    if not sources:
        raise ClawloopError("nothing to view: no evaluation directories given")
    index: list[dict[str, Any]] = []
    chunks: list[dict[str, dict[str, Any]]] = []
    groups = []
    for label, path in sources:
        episodes = sorted(load_episodes(path), key=lambda e: (e["suite"], e["skill"], e["task_id"], e["sample"]))
        groups.append({"name": label, "episodes": len(episodes)})
        for start in range(0, len(episodes), CHUNK_SIZE):
            chunk_id = len(chunks)
            chunk: dict[str, dict[str, Any]] = {}
            for ep in episodes[start:start + CHUNK_SIZE]:
                summary = {k: ep[k] for k in SUMMARY_KEYS}
                summary.update(group=label, chunk=chunk_id, key=f"{len(index)}")
                index.append(summary)
                chunk[summary["key"]] = {k: v for k, v in ep.items() if k not in SUMMARY_KEYS or k == "id"}
            chunks.append(chunk)
    tmp = out.with_name(f".{out.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "data").mkdir(parents=True)
    for i, chunk in enumerate(chunks):
        (tmp / "data" / f"chunk-{i:04d}.js").write_text(_js("chunk", i, chunk), encoding="utf-8")
    (tmp / "data" / "index.js").write_text(_js("index", {"title": title, "groups": groups, "episodes": index}),
                                           encoding="utf-8")
    write_text(tmp / "index.html", render_page(title))
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(out)
    return {"episodes": len(index), "chunks": len(chunks), "groups": groups, "path": str(out / "index.html")}
