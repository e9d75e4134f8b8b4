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
import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clawloop.core.io import write_text
from clawloop.errors import ClawloopError
from clawloop.viewer.load import SUMMARY_KEYS, load_episodes

CHUNK_SIZE = 100
"""Episodes per transcript file: a chunk of a 3-turn run weighs ~100-300 kB."""

_TEMPLATES = Path(__file__).parent / "templates"

MARKER = ".clawloop-viewer"
"""Written into every viewer directory: the one sign that `--out` may be replaced wholesale.
`--out runs` once wiped a loop's runs; now a directory is replaced only when clawloop made it."""

_VIEWER_FILE = re.compile(r"index\.html|data/index\.js|data/chunk-\d+\.js")
"""What a viewer holds; a directory of nothing else (one written before the marker existed) is
ours too, and replacing it loses nothing."""


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


def _replaceable(out: Path) -> None:
    """Refuse (ClawloopError) unless `out` is missing, an empty directory, or a viewer clawloop
    wrote: the marker file, or nothing but viewer files."""
    if not out.exists() and not out.is_symlink():
        return
    if out.is_symlink() or not out.is_dir():
        kind = "a symbolic link" if out.is_symlink() else "not a directory"
        raise ClawloopError(f"{out}: --out is {kind}; refusing to replace it (choose another --out)")
    marker = out / MARKER
    if marker.is_file() and not marker.is_symlink():
        return
    stray = [p for p in out.rglob("*")
             if not (p.is_dir() and not p.is_symlink()) and not _VIEWER_FILE.fullmatch(p.relative_to(out).as_posix())]
    if stray:
        raise ClawloopError(f"{out}: --out holds files the viewer did not write (e.g. {stray[0].relative_to(out)}); "
                            "refusing to replace it (choose a new or empty directory)")


def write_viewer(sources: Sequence[tuple[str, str | Path]], out: str | Path, title: str = "clawloop trajectories",
                 ) -> dict[str, Any]:
    """Write the viewer for `sources` ((group label, eval dir or file) pairs) into `out`.

    Returns counts ({"episodes": n, "chunks": m, "groups": [...]}) for the caller to print.
    `out` is replaced only when it is missing, empty, or a viewer written here (MARKER);
    anything else is refused before a file is read or written.
    """
    out = Path(out)
    if not out.name:  # "." or "/": the renames below need the directory's own name
        out = out.resolve()
    if not sources:
        raise ClawloopError("nothing to view: no evaluation directories given")
    _replaceable(out)
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
    out.parent.mkdir(parents=True, exist_ok=True)
    # A fresh name of our own for the build and for the old copy: a fixed ".partial" name would
    # delete whatever the user kept under it.
    tag = secrets.token_hex(6)
    tmp, old = out.with_name(f".{out.name}.{tag}.partial"), out.with_name(f".{out.name}.{tag}.old")
    tmp.mkdir()  # not exist_ok: a name already taken is never written into
    (tmp / "data").mkdir()
    try:
        for i, chunk in enumerate(chunks):
            (tmp / "data" / f"chunk-{i:04d}.js").write_text(_js("chunk", i, chunk), encoding="utf-8")
        (tmp / "data" / "index.js").write_text(_js("index", {"title": title, "groups": groups, "episodes": index}),
                                               encoding="utf-8")
        write_text(tmp / "index.html", render_page(title))
        write_text(tmp / MARKER, "A trajectory viewer written by `clawloop view`; clawloop replaces this "
                   "directory on the next run.\n")
        _replaceable(out)  # again: it may have changed while the episodes loaded
        if out.exists():
            out.rename(old)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return {"episodes": len(index), "chunks": len(chunks), "groups": groups, "path": str(out / "index.html")}
