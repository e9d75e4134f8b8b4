"""Render a CapabilityReport: a readable report.md and a pass-rate heatmap PNG (matplotlib, Agg)."""

from __future__ import annotations

import io

from clawloop.artifacts.diagnosis import CapabilityReport

HEATMAP_NAME = "pass_rate.png"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _delta(cur: float, prev: float | None) -> str:
    return "" if prev is None else f"{100 * (cur - prev):+.1f}"


def _md_cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def render_markdown(report: CapabilityReport, heatmap: str | None = HEATMAP_NAME) -> str:
    """The report as Markdown tables; `heatmap` is the PNG's file name beside it (None: no image)."""
    r = report
    graded = r.outcomes.get("passed", 0) + r.outcomes.get("failed", 0)
    out = [f"# Capability report — iteration {r.iteration}", ""]
    out.append(f"Policy `{r.policy_id or '?'}` · {r.episodes} episodes ({graded} graded) · "
                f"pass rate **{_pct(r.pass_rate)}**"
                + (f" (previous {_pct(r.previous.pass_rate)}, {_delta(r.pass_rate, r.previous.pass_rate)} pts)"
                   if r.previous else ""))
    out += ["", f"Mean turns {r.mean_turns:.2f} · mean completion tokens {r.mean_tokens:.1f} · "
                f"mean prompt tokens {r.mean_prompt_tokens:.1f}"
            + (f" (previous: {r.previous.mean_turns:.2f} turns, {r.previous.mean_tokens:.1f} tokens)"
               if r.previous else ""), ""]
    if r.narrative:
        out += ["## Narrative (written by the loop model)", "", r.narrative.strip(), ""]

    out += ["## Outcomes", ""]
    out += _table(["outcome", "episodes"], [[k, v] for k, v in sorted(r.outcomes.items())])
    out += _table(["termination", "episodes"], [[k, v] for k, v in sorted(r.terminations.items())])
    if r.lenient_calls:
        out += [f"Lenient tool calls: {r.lenient_calls} replies in {r.lenient_episodes} episodes wrote their call "
                "without `<tool_call>` tags (a ```json fence or bare JSON) and were accepted.", ""]
    if r.suites:
        out += ["## Suites", ""]
        out += _table(["suite", "episodes", "passed", "pass rate", "95% CI"],
                      [[s.suite, s.episodes, s.passes, _pct(s.pass_rate), f"{_pct(s.ci_low)}–{_pct(s.ci_high)}"]
                       for s in r.suites])

    out += ["## Pass rate per skill × level", ""]
    if r.evidence_suites:
        n = sum(c.episodes for c in r.cells)
        out += [f"Evidence: the {n} graded episodes of the held-in suites ({', '.join(r.evidence_suites)}); "
                "held-out suites are counted above and never steer the cells, failure counts per skill "
                "or recommendations.", ""]
    if heatmap and r.cells:
        out += [f"![pass rate per skill and level]({heatmap})", ""]
    out += _table(["skill", "level", "episodes", "passed", "pass rate", "95% CI", "previous", "Δ pts"],
                  [[c.skill, c.level, c.episodes, c.passes, _pct(c.pass_rate),
                    f"{_pct(c.ci_low)}–{_pct(c.ci_high)}", _pct(c.previous_pass_rate),
                    _delta(c.pass_rate, c.previous_pass_rate)] for c in r.cells])

    out += ["## Failure modes", ""]
    rows = []
    for m in sorted(r.failure_modes, key=lambda m: -m.count):
        top = ", ".join(f"{s} {n}" for s, n in sorted(m.by_skill.items(), key=lambda kv: -kv[1])[:3])
        prev = "" if m.previous_count is None else str(m.previous_count)
        rows.append([m.mode, m.count, _pct(m.share), prev, top, " ".join(f"`{e}`" for e in m.examples[:3])])
    out += _table(["mode", "episodes", "share", "previous", "top skills", "examples"], rows)

    if r.previous is not None:
        out += ["## Regressions", ""]
        if r.regressions:
            out += _table(["skill", "level", "previous", "current", "why"],
                          [[g.skill, g.level, _pct(g.previous), _pct(g.current), g.reason] for g in r.regressions])
        else:
            out += ["None.", ""]

    out += ["## Recommendations", ""]
    out += _table(["skill", "action", "level", "reason"],
                  [[x.skill, f"**{x.action}**", x.level, x.reason] for x in r.recommendations])

    out += [f"## Commands ({r.command_vocabulary} distinct)", ""]
    out += _table(["command", "uses", "share"], [[f"`{c.command}`", c.count, _pct(c.share)] for c in r.commands])

    d = r.diversity
    if d.tasks:
        out += ["## Pool diversity", ""]
        out += _table(["tasks", "unique instructions", "skills", "skill entropy (bits)", "mean level"],
                      [[d.tasks, d.unique_instructions, d.skills, f"{d.skill_entropy:.3f}", f"{d.mean_level:.2f}"]])
    return "\n".join(out).rstrip() + "\n"


def render_heatmap(report: CapabilityReport) -> bytes:
    """A PNG heatmap of pass rate per skill (rows) × level (columns), annotated with passes/episodes."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    skills = sorted({c.skill for c in report.cells})
    levels = sorted({c.level for c in report.cells})
    grid = np.full((max(1, len(skills)), max(1, len(levels))), np.nan)
    fig = Figure(figsize=(1.6 + 0.9 * max(1, len(levels)), 1.2 + 0.45 * max(1, len(skills))), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for c in report.cells:
        i, j = skills.index(c.skill), levels.index(c.level)
        grid[i, j] = c.pass_rate
        ax.text(j, i, f"{c.passes}/{c.episodes}", ha="center", va="center", fontsize=8,
                color="white" if c.pass_rate < 0.5 else "black")
    im = ax.imshow(np.ma.masked_invalid(grid), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(levels)), [str(v) for v in levels])
    ax.set_yticks(range(len(skills)), skills)
    ax.set_xlabel("level")
    ax.set_title(f"pass rate, iteration {report.iteration}")
    fig.colorbar(im, ax=ax, fraction=0.05)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
