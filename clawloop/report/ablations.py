"""Ablations: the README's `dvc exp run -S ...` experiments, read from `dvc exp show --json`, and
loops run in clones of their own (`benchmarks/perf/learning.py --repro --set ...`), read from
their params.yaml and runs/iter-*/metrics.json.

The report runs inside `dvc repro` too, where experiments may be absent, DVC may hold its lock
or the directory may not be a Git repo: any of these leaves the table out, never fails the report.
A clone named on the command line that holds no loop is an error that names it.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clawloop.errors import ClawloopError

KNOBS = ("synthesis.conditioning", "synthesis.routines", "train.method")
"""The params the README's ablations change (uniform, both-routines, grpo, sft+grpo, playbook, sft+playbook)."""

_METRICS = re.compile(r"(?:^|/)runs/iter-(\d+)/metrics\.json$")


def _get(tree: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def _nodes(entries: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(name, data, is an experiment) of the baseline commits and every experiment under them (DVC 3 layout)."""
    for e in entries or []:
        if e.get("data"):
            yield e.get("name") or e.get("rev", "?"), e["data"], False
        for exp in e.get("experiments") or []:
            for r in exp.get("revs") or []:
                if r.get("data"):
                    yield r.get("name") or r.get("rev", "?")[:7], r["data"], True


def label(params: dict[str, Any]) -> str:
    """The ablation a params set is, in the README's words."""
    parts = []
    if _get(params, "synthesis.conditioning") is False:
        parts.append("uniform")
    routines = _get(params, "synthesis.routines") or {}
    if any(v for k, v in routines.items() if k != "procedural"):
        parts.append("both-routines")
    method = _get(params, "train.method")
    if method and method != "sft":
        parts.append(method)
    return ", ".join(parts) or "default"


def _row(name: str, params: dict[str, Any], it: int, m: dict[str, Any], is_exp: bool) -> dict[str, Any]:
    return {"name": name, "ablation": label(params), "iteration": it, "experiment": is_exp,
            "params": {k: json.dumps(_get(params, k), sort_keys=True) for k in KNOBS},
            "rate": m["heldout_pass_rate"], "low": m.get("heldout_ci_low"), "high": m.get("heldout_ci_high"),
            "best": m.get("best_heldout_pass_rate"), "format_errors": m.get("format_error_episodes")}


def parse(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per experiment with a final held-out figure: name, ablation, params, last iteration."""
    rows = []
    for name, data, is_exp in _nodes(entries):
        params = ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {}
        finals = []
        for path, m in (data.get("metrics") or {}).items():
            hit = _METRICS.search(path)
            if hit and isinstance(m.get("data"), dict) and "heldout_pass_rate" in m["data"]:
                finals.append((int(hit.group(1)), m["data"]))
        if not finals:
            continue
        it, m = max(finals, key=lambda x: x[0])
        rows.append(_row(name, params, it, m, is_exp))
    return rows


def from_clones(repos: list[str | Path]) -> list[dict[str, Any]]:
    """One row per loop run in a clone of its own: its params.yaml and last runs/iter-N/metrics.json."""
    import yaml

    rows = []
    for repo in map(Path, repos):
        try:
            params = yaml.safe_load((repo / "params.yaml").read_text()) or {}
            finals = sorted((int(hit.group(1)), p) for p in repo.glob("runs/iter-*/metrics.json")
                            if (hit := _METRICS.search(p.as_posix())))
            if not finals:
                raise ClawloopError(f"{repo}: no runs/iter-N/metrics.json (not a loop that ran)")
            it, path = finals[-1]
            m = json.loads(path.read_text())
            # learning.py --repro --workdir DIR clones into DIR/repo: DIR names the variant.
            rows.append(_row(repo.name if repo.name != "repo" else repo.parent.name, params, it, m, True))
        except (OSError, ValueError, yaml.YAMLError, KeyError, AttributeError) as e:
            raise ClawloopError(f"{repo}: cannot read an ablation's loop ({type(e).__name__}: {e})") from None
    return rows


def this_run(repo: Path) -> list[dict[str, Any]]:
    """The row of the loop the report is about (`repo`: where its params.yaml and runs/ lie), named
    "this run"; empty when that is not a loop's checkout."""
    try:  # no params.yaml or no metrics.json: from_clones says so, and this run has no row
        (row,) = from_clones([repo])
    except ClawloopError:
        return []
    return [{**row, "name": "this run", "experiment": False}]


def read(repo: str | Path, timeout: float = 120) -> list[dict[str, Any]]:
    """Rows of `dvc exp show --json` in `repo` (empty when DVC, Git or experiments are missing)."""
    try:
        p = subprocess.run(["dvc", "exp", "show", "--json"], cwd=repo, capture_output=True,
                           text=True, timeout=timeout)
        if p.returncode != 0:
            return []
        rows = parse(json.loads(p.stdout or "[]"))
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError, AttributeError, TypeError):
        return []
    return rows if any(r["experiment"] for r in rows) else []  # the workspace and HEAD alone compare nothing
