"""Diagnose one iteration: trajectories → diagnosis.json, diagnosis.md and pass_rate.png.

Everything is computed first (queries, report, narrative, Markdown, PNG); files are written only
after that succeeded, each atomically, diagnosis.json last. Bad input raises ClawloopError before
anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from clawloop.artifacts.diagnosis import CapabilityReport, load_diagnosis
from clawloop.artifacts.stage import output_dir
from clawloop.config.diagnosis import DiagnosisParams
from clawloop.config.params import Params
from clawloop.core.io import write_bytes, write_text
from clawloop.core.trajectory import FRESH_SUITE, HELD_IN_SUITES
from clawloop.errors import ClawloopError
from clawloop.phases.diagnose.capability import build_diagnosis, pool_diversity
from clawloop.phases.diagnose.queries import compute_figures, find_trajectories
from clawloop.phases.diagnose.render import HEATMAP_NAME, render_heatmap, render_markdown
from clawloop.policy.types import Policy, SamplingParams

DIAGNOSIS_NAME = "diagnosis.json"
MARKDOWN_NAME = "diagnosis.md"

NARRATIVE_SYSTEM = (
    "You are the agent being trained in a shell-task loop. Below is your own capability report. "
    "Write a short narrative (at most 5 sentences, plain text, no tool calls): what you do well, "
    "where you fail and why, and what to practise next."
)


def diagnosis_summary(report: CapabilityReport, max_cells: int = 40) -> str:
    """A compact plain-text summary of the report, the prompt of the narrative."""
    lines = [f"iteration {report.iteration}: {report.episodes} episodes, pass rate {report.pass_rate:.2f}"]
    if report.previous:
        lines.append(f"previous iteration pass rate {report.previous.pass_rate:.2f}")
    lines.append("pass rate per skill and level:")
    for c in report.cells[:max_cells]:
        lines.append(f"- {c.skill} level {c.level}: {c.passes}/{c.episodes}")
    modes = [m for m in report.failure_modes if m.count]
    if modes:
        lines.append("failure modes: " + ", ".join(f"{m.mode} {m.count}" for m in modes))
    if report.regressions:
        lines.append("regressions: " + ", ".join(f"{g.skill} L{g.level}" for g in report.regressions))
    lines.append("recommendations: " + ", ".join(f"{r.skill}: {r.action} to L{r.level}"
                                                 for r in report.recommendations))
    return "\n".join(lines)


def narrate(report: CapabilityReport, policy: Policy, sampling: SamplingParams | None = None,
            max_chars: int = 2000) -> str:
    """Ask the loop's own policy (anything with `generate(conversations, sampling)`) for a narrative."""
    if sampling is None:
        sampling = SamplingParams(temperature=0.0, max_new_tokens=400)
    conversation = [{"role": "system", "content": NARRATIVE_SYSTEM},
                    {"role": "user", "content": diagnosis_summary(report)}]
    replies = policy.generate([conversation], sampling)
    reply = replies[0] if replies else ""
    text = reply if isinstance(reply, str) else getattr(reply, "text", "")
    return str(text).strip()[:max_chars]


def diagnose(
    trajectories: Sequence[str | Path],
    *,
    out_dir: str | Path | None = None,
    previous: str | Path | CapabilityReport | None = None,
    pool: str | Path | None = None,
    iteration: int | None = None,
    params: DiagnosisParams | None = None,
    policy: Policy | None = None,
    sampling: SamplingParams | None = None,
    evidence_suites: Sequence[str] | None = None,
) -> CapabilityReport:
    """Diagnose rollout directories / Parquet parts; write the diagnosis files into `out_dir` if given.

    `previous` is the previous iteration's diagnosis.json (trends and regressions), `pool` a pool
    JSONL (diversity figures, skills to expand), `policy` the loop model for the optional narrative
    (used only when params.narrative is true). The cells, per-skill failure counts and
    recommendations read only the episodes of `evidence_suites` (None: all): the loop passes its
    held-in suites, so no held-out episode steers synthesis or training.
    """
    params = params or DiagnosisParams()
    files = find_trajectories(trajectories)
    prev = load_diagnosis(previous) if isinstance(previous, str | Path) else previous
    diversity, pool_skills = pool_diversity(pool) if pool is not None else (None, None)
    figures = compute_figures(files, top_commands=params.top_commands, examples=params.examples,
                              threads=params.threads, evidence_suites=evidence_suites)
    report = build_diagnosis(figures, params, previous=prev, diversity=diversity,
                          pool_skills=pool_skills, iteration=iteration)
    if params.narrative and policy is not None:
        report.narrative = narrate(report, policy, sampling, params.narrative_max_chars) or None
    if out_dir is not None:
        write_diagnosis(report, out_dir)
    return report


def write_diagnosis(report: CapabilityReport, out_dir: str | Path) -> None:
    """Render then write pass_rate.png, diagnosis.md and diagnosis.json (last), each atomically."""
    out = Path(out_dir)
    png = render_heatmap(report) if report.cells else None
    markdown = render_markdown(report, HEATMAP_NAME if png else None)
    data = report.model_dump_json(indent=2) + "\n"
    if png is not None:
        write_bytes(out / HEATMAP_NAME, png)
    else:
        (out / HEATMAP_NAME).unlink(missing_ok=True)
    write_text(out / MARKDOWN_NAME, markdown)
    write_text(out / DIAGNOSIS_NAME, data)


def diagnose_iteration(params: Params, *, iteration: int, eval: list[Path], out: Path, pool: Path | None = None,
                       previous_diagnosis: Path | None = None) -> CapabilityReport:
    """The capability report of iteration `iteration` from its rollout dirs `eval` (the evaluation,
    the probe) into `out`: diagnosis.json (read by the next synthesis), diagnosis.md, a heatmap. The
    cells and recommendations rest on held-in episodes only: the trained policy's fresh instances
    (`<eval>/fresh`) when the evaluate stage made them, else the pool sample and the probe."""
    if params.diagnosis.options.narrative:  # a knob that would otherwise do nothing here
        raise ClawloopError("params.yaml: diagnosis.options.narrative: the diagnose stage loads no policy, so it "
                            "writes no narrative; set it false (`clawloop diagnose --narrative-model DIR` writes one)")
    # A probe that rolled out nothing (no task kept) leaves no episode parts: nothing to read there.
    rollouts = [p for p in eval if not p.is_dir() or any(p.rglob("episodes*.parquet"))]
    for p in sorted(set(eval) - set(rollouts)):
        print(f"[diagnose] {p}: no episodes, skipped")
    fresh = any(p.is_dir() and any((p / FRESH_SUITE).rglob("episodes*.parquet")) for p in rollouts)
    evidence = (FRESH_SUITE,) if fresh else HELD_IN_SUITES
    report = diagnose(rollouts, previous=previous_diagnosis, pool=pool, iteration=iteration,
                      params=params.diagnosis.options, evidence_suites=evidence)
    with output_dir(out) as tmp:
        write_diagnosis(report, tmp)
    print(f"[diagnose] iteration {iteration}: {report.episodes} episodes, "
          f"pass rate {report.pass_rate:.3f}, {sum(c.episodes for c in report.cells)} held-in graded episodes "
          f"({', '.join(evidence)}) behind {len(report.recommendations)} recommendations")
    return report
