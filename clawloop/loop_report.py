"""`clawloop report`: the loop at a glance, as report.md, report.html and DVC plot tables.

Reads what the stages wrote under runs/ (metrics.json, diagnosis/diagnosis.json, the validated
pools, transfer/transfer.json) and draws: held-out pass rate per iteration and suite, a per-skill
heatmap across iterations, failure modes across iterations, pool composition and difficulty,
and the transfer comparison.
"""

from __future__ import annotations

import base64
import io
import re
from collections import Counter
from pathlib import Path
from typing import Any

from clawloop.errors import ClawloopError
from clawloop.io import iter_jsonl, read_json, write_bytes, write_text


def _iteration_dirs(runs: Path) -> list[tuple[int, Path]]:
    found = []
    for d in runs.glob("iter-*"):
        m = re.fullmatch(r"iter-(\d+)", d.name)
        if m and d.is_dir():
            found.append((int(m.group(1)), d))
    return sorted(found)


def collect(runs: str | Path) -> dict[str, Any]:
    """Gather every figure the report shows from the runs directory."""
    runs = Path(runs)
    iters = _iteration_dirs(runs)
    if not iters:
        raise ClawloopError(f"{runs}: no iteration directories (iter-N) found; run `dvc repro` first")
    data: dict[str, Any] = {"iterations": [], "suites": {}, "skills": {}, "modes": {}, "pools": {}}
    for i, d in iters:
        data["iterations"].append(i)
        if (d / "metrics.json").exists():
            m = read_json(d / "metrics.json")
            data.setdefault("metrics", {})[i] = m
            for name, s in m.get("suites", {}).items():
                data["suites"].setdefault(name, {})[i] = s["pass_at_1"]
        diag = d / "diagnosis" / "diagnosis.json"
        if diag.exists():
            rep = read_json(diag)
            per_skill: dict[str, list[int]] = {}
            for c in rep.get("cells", []):
                acc = per_skill.setdefault(c["skill"], [0, 0])
                acc[0] += c["passes"]
                acc[1] += c["episodes"]
            for skill, (p, n) in per_skill.items():
                data["skills"].setdefault(skill, {})[i] = p / n if n else 0.0
            for fm in rep.get("failure_modes", []):
                data["modes"].setdefault(fm["mode"], {})[i] = fm["count"]
        pool = d / "validated" / "valid.jsonl"
        if pool.exists():
            skills: Counter[str] = Counter()
            levels: list[int] = []
            for _, t in iter_jsonl(pool):
                skills[t.get("skill", "?")] += 1
                levels.append(int(t.get("level", 1)))
            data["pools"][i] = {"skills": dict(skills), "tasks": len(levels),
                                "mean_level": sum(levels) / len(levels) if levels else 0.0}
    transfer = runs / "transfer" / "transfer.json"
    if transfer.exists():
        data["transfer"] = read_json(transfer)
    return data


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def draw(data: dict[str, Any]) -> dict[str, bytes]:
    """Render the plots as PNG bytes, keyed by file name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    iters = data["iterations"]
    out: dict[str, bytes] = {}

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for suite, by_iter in sorted(data["suites"].items()):
        xs = sorted(by_iter)
        ax.plot(xs, [by_iter[x] for x in xs], marker="o", label=suite)
    ax.set(xlabel="iteration", ylabel="pass@1", title="Pass rate per iteration", ylim=(0, 1))
    ax.set_xticks(iters)
    ax.legend(fontsize=8)
    out["pass_rate.png"] = _png(fig)
    plt.close(fig)

    skills = sorted(data["skills"])
    if skills:
        grid = [[data["skills"][s].get(i, float("nan")) for i in iters] for s in skills]
        fig, ax = plt.subplots(figsize=(1.2 + 0.8 * len(iters), 0.8 + 0.35 * len(skills)))
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(iters)), [str(i) for i in iters])
        ax.set_yticks(range(len(skills)), skills)
        ax.set(xlabel="iteration", title="Pass rate per skill (diagnosed episodes)")
        for r, row in enumerate(grid):
            for c, v in enumerate(row):
                if v == v:  # not NaN
                    ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if v < 0.6 else "black")
        fig.colorbar(im, ax=ax, fraction=0.04)
        out["skills.png"] = _png(fig)
        plt.close(fig)

    if data["modes"]:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        bottom = [0] * len(iters)
        for mode in sorted(data["modes"]):
            vals = [data["modes"][mode].get(i, 0) for i in iters]
            ax.bar([str(i) for i in iters], vals, bottom=bottom, label=mode)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax.set(xlabel="iteration", ylabel="episodes", title="Failure modes")
        ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
        out["failure_modes.png"] = _png(fig)
        plt.close(fig)

    if data["pools"]:
        pools = data["pools"]
        pool_iters = sorted(pools)
        all_skills = sorted({s for p in pools.values() for s in p["skills"]})
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
        bottom = [0] * len(pool_iters)
        for s in all_skills:
            vals = [pools[i]["skills"].get(s, 0) for i in pool_iters]
            ax1.bar([str(i) for i in pool_iters], vals, bottom=bottom, label=s)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax1.set(xlabel="iteration", ylabel="validated tasks", title="Pool composition")
        ax1.legend(fontsize=6, ncol=2)
        ax2.plot(pool_iters, [pools[i]["mean_level"] for i in pool_iters], marker="o")
        ax2.set(xlabel="iteration", ylabel="mean level", title="Pool difficulty")
        ax2.set_xticks(pool_iters)
        out["pool.png"] = _png(fig)
        plt.close(fig)

    tr = data.get("transfer")
    if tr:
        names = [k for k in ("first", "final") if k in tr.get("pass_at_1", {})]
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.bar(names, [tr["pass_at_1"][k] for k in names], color=["#999", "#2a7"][: len(names)])
        ax.set(ylabel="held-out pass@1", title="Transfer: fresh model trained on", ylim=(0, 1))
        out["transfer.png"] = _png(fig)
        plt.close(fig)
    return out


def markdown(data: dict[str, Any], images: list[str]) -> str:
    """The report as Markdown (tables; images referenced beside it)."""
    iters = data["iterations"]
    lines = ["# clawloop report", "", "## Pass@1 per iteration", ""]
    lines.append("| suite | " + " | ".join(f"iter {i}" for i in iters) + " |")
    lines.append("|---|" + "---|" * len(iters))
    for suite, by_iter in sorted(data["suites"].items()):
        cells = [f"{by_iter[i]:.3f}" if i in by_iter else "" for i in iters]
        lines.append(f"| {suite} | " + " | ".join(cells) + " |")
    metrics = data.get("metrics", {})
    if metrics:
        lines += ["", "## Gate", "", "| iteration | held-out pass@1 | promoted | policy from | best |",
                  "|---|---|---|---|---|"]
        for i in sorted(metrics):
            m = metrics[i]
            lines.append(f"| {i} | {m['heldout_pass_rate']:.3f} | {m['promoted']} | "
                         f"{m['policy_from']} | {m['best_heldout_pass_rate']:.3f} |")
    if data["skills"]:
        lines += ["", "## Pass rate per skill", "",
                  "| skill | " + " | ".join(f"iter {i}" for i in iters) + " |",
                  "|---|" + "---|" * len(iters)]
        for s in sorted(data["skills"]):
            cells = [f"{data['skills'][s][i]:.2f}" if i in data["skills"][s] else "" for i in iters]
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
    if data["modes"]:
        lines += ["", "## Failure modes (episodes)", "",
                  "| mode | " + " | ".join(f"iter {i}" for i in iters) + " |",
                  "|---|" + "---|" * len(iters)]
        for mode in sorted(data["modes"]):
            lines.append(f"| {mode} | " + " | ".join(str(data["modes"][mode].get(i, 0)) for i in iters) + " |")
    if data["pools"]:
        lines += ["", "## Validated pools", "", "| iteration | tasks | mean level |", "|---|---|---|"]
        for i in sorted(data["pools"]):
            p = data["pools"][i]
            lines.append(f"| {i} | {p['tasks']} | {p['mean_level']:.2f} |")
    tr = data.get("transfer")
    if tr:
        lines += ["", "## Transfer", "", "| trained on | held-out pass@1 |", "|---|---|"]
        for k, v in tr.get("pass_at_1", {}).items():
            lines.append(f"| {k} | {v:.3f} |")
        if "gain" in tr:
            lines.append(f"\nGain of the final refined task set over iteration 1's: {tr['gain']:+.3f}")
    lines += [""] + [f"![{name}]({name})" for name in images]
    return "\n".join(lines) + "\n"


def write_report(runs: str | Path, out: str | Path) -> Path:
    """Write report.md, report.html, the PNG plots and DVC plot CSVs into `out`."""
    out = Path(out)
    data = collect(runs)
    images = draw(data)
    for name, png in images.items():
        write_bytes(out / name, png)
    md = markdown(data, sorted(images))
    write_text(out / "report.md", md)
    from markdown_it import MarkdownIt

    inline = md
    for name, png in images.items():
        inline = inline.replace(f"]({name})", f"](data:image/png;base64,{base64.b64encode(png).decode('ascii')})")
    page = ("<!doctype html><meta charset='utf-8'><title>clawloop report</title>"
            "<style>body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}</style>"
            + MarkdownIt("commonmark").enable("table").render(inline))
    write_text(out / "report.html", page)
    rows = ["iteration,suite,pass_at_1"]
    for suite, by_iter in sorted(data["suites"].items()):
        rows += [f"{i},{suite},{by_iter[i]:.4f}" for i in sorted(by_iter)]
    write_text(out / "pass_rate.csv", "\n".join(rows) + "\n")
    rows = ["iteration,skill,pass_rate"]
    for skill, by_iter in sorted(data["skills"].items()):
        rows += [f"{i},{skill},{by_iter[i]:.4f}" for i in sorted(by_iter)]
    write_text(out / "skills.csv", "\n".join(rows) + "\n")
    return out / "report.html"
