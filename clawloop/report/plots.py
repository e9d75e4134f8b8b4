"""The report's plots as PNG bytes: pass rate with intervals, skills heatmap, failure modes, pools.

Legends sit outside the axes (bbox_inches="tight" makes room for them): inside, a 14-skill
legend covered the pool-composition bars it explains.
"""

from __future__ import annotations

import io
from typing import Any


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def _stacked(ax: Any, iters: list[int], series: dict[str, dict[int, int]], cmap: Any) -> None:
    bottom = [0] * len(iters)
    for n, name in enumerate(sorted(series)):
        vals = [series[name].get(i, 0) for i in iters]
        ax.bar([str(i) for i in iters], vals, bottom=bottom, label=name, color=cmap(n % cmap.N))
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    handles, labels = ax.get_legend_handles_labels()  # top of the legend = top of the stack
    ax.legend(handles[::-1], labels[::-1], fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left",
              borderaxespad=0, frameon=False)


def draw(data: dict[str, Any]) -> dict[str, bytes]:
    """Render the plots, keyed by file name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    iters = data["iterations"]
    out: dict[str, bytes] = {}
    many = plt.get_cmap("tab20")

    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    held = data["heldout"]
    if held:
        xs = sorted(held)
        ys = [held[x]["rate"] for x in xs]
        err = [[y - held[x]["low"] for x, y in zip(xs, ys, strict=True)],
               [held[x]["high"] - y for x, y in zip(xs, ys, strict=True)]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=4, lw=2, color="black",
                    label="held-out (95% Wilson interval)")
    for suite, by_iter in sorted(data["suites"].items()):
        xs = sorted(by_iter)
        ax.plot(xs, [by_iter[x] for x in xs], marker=".", ls="--", alpha=0.7, label=suite)
    ax.set(xlabel="iteration", ylabel="pass@1", title="Pass rate per iteration", ylim=(-0.02, 1.02))
    ax.set_xticks(iters)
    ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left", borderaxespad=0, frameon=False)
    out["pass_rate.png"] = _png(fig)
    plt.close(fig)

    skills = sorted(data["skills"])
    if skills:
        nan = float("nan")
        grid = [[data["skills"][s][i]["rate"] if i in data["skills"][s] else nan for i in iters] for s in skills]
        fig, ax = plt.subplots(figsize=(1.8 + 1.1 * len(iters), 0.9 + 0.42 * len(skills)))
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(iters)), [str(i) for i in iters])
        ax.set_yticks(range(len(skills)), skills)
        ax.set(xlabel="iteration", title="Pass rate per skill [95% interval]")
        for r, s in enumerate(skills):
            for c, i in enumerate(iters):
                cell = data["skills"][s].get(i)
                if cell:
                    ax.text(c, r, f"{cell['rate']:.2f} [{cell['low']:.2f}, {cell['high']:.2f}]", ha="center",
                            va="center", fontsize=6.5, color="white" if cell["rate"] < 0.6 else "black")
        fig.colorbar(im, ax=ax, fraction=0.04)
        out["skills.png"] = _png(fig)
        plt.close(fig)

    if data["modes"]:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        _stacked(ax, iters, data["modes"], plt.get_cmap("tab10"))
        ax.set(xlabel="iteration", ylabel="episodes", title="Failure modes (an episode can show several)")
        out["failure_modes.png"] = _png(fig)
        plt.close(fig)

    if data["pools"]:
        pools = data["pools"]
        pool_iters = sorted(pools)
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [3, 2], "wspace": 0.9})
        by_skill = {s: {i: pools[i]["skills"].get(s, 0) for i in pool_iters}
                    for s in {s for p in pools.values() for s in p["skills"]}}
        _stacked(ax1, pool_iters, by_skill, many)
        ax1.set(xlabel="iteration", ylabel="validated tasks", title="Pool composition")
        ax2.plot(pool_iters, [pools[i]["mean_level"] for i in pool_iters], marker="o")
        top = max(pools[i]["mean_level"] for i in pool_iters)
        ax2.set(xlabel="iteration", ylabel="mean level", title="Pool difficulty", ylim=(0, max(5.0, top + 0.5)))
        ax2.set_xticks(pool_iters)
        out["pool.png"] = _png(fig)
        plt.close(fig)

    tr = data.get("transfer")
    if tr:
        names = [k for k in ("first", "final") if k in tr.get("pass_at_1", {})]
        fig, ax = plt.subplots(figsize=(4, 3))
        bars = ax.bar(names, [tr["pass_at_1"][k] for k in names], color=["#999", "#2a7"][: len(names)])
        ax.bar_label(bars, fmt="%.3f")  # a 0.000 bar is invisible: its label says it is there
        ax.set(ylabel="held-out pass@1", title="Transfer: fresh model trained on", ylim=(0, 1))
        out["transfer.png"] = _png(fig)
        plt.close(fig)
    return out
