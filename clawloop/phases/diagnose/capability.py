"""Build the CapabilityReport from the query figures: cells, modes, trends, regressions, advice."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

from clawloop.artifacts.diagnosis import (
    FAILURE_MODES,
    Action,
    CapabilityReport,
    CellStats,
    CommandStats,
    Diversity,
    FailureModeStats,
    PreviousSummary,
    Recommendation,
    Regression,
    SuiteStats,
)
from clawloop.config.diagnosis import DiagnosisParams
from clawloop.core.stats import effective_trials, wilson_interval
from clawloop.core.tasks.pool import read_pool
from clawloop.phases.diagnose.queries import Figures


def pool_diversity(path: str | Path) -> tuple[Diversity, dict[str, int]]:
    """Diversity figures of a pool JSONL, and the lowest level seen per skill."""
    tasks = read_pool(path)
    skills = Counter(t.skill for t in tasks)
    n = len(tasks)
    entropy = -sum(c / n * math.log2(c / n) for c in skills.values()) if n else 0.0
    min_level: dict[str, int] = {}
    for t in tasks:
        min_level[t.skill] = min(min_level.get(t.skill, t.level), t.level)
    div = Diversity(
        tasks=n,
        unique_instructions=len({t.instruction.strip() for t in tasks}),
        skills=len(skills),
        skill_entropy=round(abs(entropy), 6),
        mean_level=round(sum(t.level for t in tasks) / n, 6) if n else 0.0,
    )
    return div, min_level


def _pass_figures(passes: int, episodes: int, effective: float | None = None) -> dict[str, Any]:
    """The fields of a PassStats: counts, rate and its Wilson interval (over `effective`
    independent episodes when given)."""
    rate = passes / episodes if episodes else 0.0
    n = episodes if effective is None else effective
    lo, hi = wilson_interval(rate * n, n)
    return dict(episodes=episodes, passes=passes, pass_rate=rate, ci_low=lo, ci_high=hi)


def _cell(skill: str, level: int, episodes: int, passes: int, tasks: int | None = None,
          yy: float = 0.0, yn: float = 0.0, nn: float = 0.0) -> CellStats:
    """A cell's stats; with `tasks` and the moments over tasks (CELLS_SQL), its interval is over
    the episodes' effective number (`effective_trials`); without, each episode counts as a task."""
    effective = None if tasks is None else effective_trials(episodes, passes, tasks, yy, yn, nn)
    return CellStats(skill=skill, level=level, tasks=tasks,
                     effective_episodes=None if effective is None else round(effective, 3),
                     **_pass_figures(passes, episodes, effective))


def find_regressions(
    cells: list[CellStats], previous: CapabilityReport, params: DiagnosisParams
) -> list[Regression]:
    """Cells whose pass rate fell: intervals no longer overlap, or a drop beyond the margin."""
    out: list[Regression] = []
    for c in cells:
        p = previous.cell(c.skill, c.level)
        if p is None or c.pass_rate >= p.pass_rate:
            continue
        drop = p.pass_rate - c.pass_rate
        if c.ci_high < p.ci_low:
            reason = f"interval [{c.ci_low:.2f}, {c.ci_high:.2f}] below previous [{p.ci_low:.2f}, {p.ci_high:.2f}]"
        elif drop > params.regression_margin and min(c.episodes, p.episodes) >= params.regression_min_episodes:
            reason = f"fell by {drop:.2f} > margin {params.regression_margin:.2f}"
        else:
            continue
        out.append(Regression(skill=c.skill, level=c.level, previous=p.pass_rate, current=c.pass_rate,
                              reason=reason))
    return out


def _dominant_mode(modes: list[FailureModeStats], skill: str) -> str:
    """The skill's most frequent failure mode of the agent's own (infra_error is not)."""
    own = [m for m in modes if m.mode != "infra_error" and m.mode in FAILURE_MODES]
    best = max(own, key=lambda m: (m.by_skill.get(skill, 0), -FAILURE_MODES.index(m.mode)), default=None)
    if best is None or best.by_skill.get(skill, 0) == 0:
        return ""
    return f"; dominant failure: {best.mode} ({best.by_skill[skill]})"


def decide_level(cells: list[CellStats], params: DiagnosisParams) -> tuple[Action, int, CellStats | None, str]:
    """The curriculum's one rule for a skill: (action, level, deciding cell, why) from its cells.

    Cells with fewer than `min_episodes` graded episodes carry no decision. Otherwise a failing
    level (Wilson high end <= lower_ci_high; the lowest such) steps the skill back below it (to 1 at
    the least: `lower` at level 1 says it fails even there); else the top assessed level raises it
    one level when reliable (low end >= raise_ci_low); else it holds at its frontier, the highest
    level passed at least once (the lowest assessed when none was). The report's recommendations
    and the next synthesis plan are both this rule: the plan reads the recommendations, it does
    not decide again."""
    judged = sorted((c for c in cells if c.episodes >= params.min_episodes), key=lambda c: c.level)
    if not judged:
        n = sum(c.episodes for c in cells)
        return "expand", 1, None, f"{n} graded episodes, fewer than {params.min_episodes} at every level"
    top = judged[-1]
    failing = [c for c in judged if c.ci_high <= params.lower_ci_high]
    if failing:
        cell = failing[0]
        return "lower", max(1, cell.level - 1), cell, f"{_figures(cell)}; CI high <= {params.lower_ci_high:.2f}"
    if top.ci_low >= params.raise_ci_low:
        if top.level >= params.max_level:
            return "hold", top.level, top, f"{_figures(top)}; reliable at the top level {params.max_level}"
        return "raise", top.level + 1, top, f"{_figures(top)}; CI low >= {params.raise_ci_low:.2f}"
    # Neither reliable nor failing: hold at the frontier, the highest level passed at least once
    # (the lowest assessed when none was). Holding at the top put 65 of iteration 2's 96 tasks at
    # level 2, where the base had passed 1 of 96 probe episodes (0/8 is not yet "failing").
    frontier = max((c for c in judged if c.passes > 0), key=lambda c: c.level, default=judged[0])
    above = "" if frontier is top else f"; none of level {top.level}'s {top.episodes} passed yet"
    return "hold", frontier.level, frontier, (f"{_figures(frontier)}; neither reliable (CI low < "
                                              f"{params.raise_ci_low:.2f}) nor failing (CI high > "
                                              f"{params.lower_ci_high:.2f}){above}")


def _figures(c: CellStats) -> str:
    tasks = "" if c.tasks is None else f" of {c.tasks} tasks (worth {c.effective_episodes:g} independent)"
    return f"level {c.level}: {c.passes}/{c.episodes} passed{tasks}, 95% CI [{c.ci_low:.2f}, {c.ci_high:.2f}]"


def recommend(
    cells: list[CellStats],
    modes: list[FailureModeStats],
    params: DiagnosisParams,
    seen_skills: list[str],
    expected_skills: dict[str, int],
) -> list[Recommendation]:
    """One recommendation per skill (`decide_level`); `expected_skills` maps skills the loop
    should cover (pool, known skills) to the level at which to start them."""
    by_skill: dict[str, list[CellStats]] = {}
    for c in cells:
        by_skill.setdefault(c.skill, []).append(c)
    out: list[Recommendation] = []
    for skill in sorted(set(seen_skills) | set(expected_skills) | set(by_skill)):
        start = expected_skills.get(skill, 1)
        if skill not in by_skill:
            reason = ("episodes ran but none was graded (errors or skips only)" if skill in seen_skills
                      else "no episodes: add tasks of this skill")
            out.append(Recommendation(skill=skill, action="expand", level=start, reason=reason))
            continue
        action, level, cell, why = decide_level(by_skill[skill], params)
        if cell is None:
            out.append(Recommendation(skill=skill, action="expand", level=start, reason=why))
            continue
        if action != "raise":
            why += _dominant_mode(modes, skill)
        out.append(Recommendation(skill=skill, action=action, level=level, reason=why,
                                  assessed_level=cell.level, episodes=cell.episodes, passes=cell.passes,
                                  pass_rate=cell.pass_rate))
    return out


def build_diagnosis(
    figures: Figures,
    params: DiagnosisParams | None = None,
    *,
    previous: CapabilityReport | None = None,
    diversity: Diversity | None = None,
    pool_skills: dict[str, int] | None = None,
    iteration: int | None = None,
) -> CapabilityReport:
    """Turn the figures into the report (without a narrative)."""
    params = params or DiagnosisParams()
    cells = [_cell(*c) for c in figures.cells]
    if previous is not None:
        for c in cells:
            p = previous.cell(c.skill, c.level)
            c.previous_pass_rate = p.pass_rate if p else None
    suites = []
    for suite, n, passes in figures.suites:
        suites.append(SuiteStats(suite=suite or "", **_pass_figures(passes, n)))
    modes = []
    for mode in FAILURE_MODES:
        m = figures.modes.get(mode)
        count = m.count if m else 0
        modes.append(FailureModeStats(
            mode=mode, count=count,
            share=min(1.0, count / figures.flagged) if figures.flagged else 0.0,
            examples=list(m.examples) if m else [], by_skill=dict(m.by_skill) if m else {},
            previous_count=previous.mode_count(mode) if previous is not None else None,
        ))
    total = figures.commands_total
    commands = [CommandStats(command=name, count=n, share=n / total if total else 0.0)
                for name, n in figures.top_commands]
    expected = dict(pool_skills or {})
    for s in params.known_skills:
        expected.setdefault(s, 1)
    it = iteration if iteration is not None else (figures.iteration if figures.iteration is not None else 0)
    return CapabilityReport(
        iteration=it,
        policy_id=figures.policy_id,
        episodes=figures.episodes,
        pass_rate=figures.passes / figures.graded if figures.graded else 0.0,
        cells=cells,
        evidence_suites=figures.evidence_suites,
        failure_modes=modes,
        mean_turns=figures.mean_turns,
        mean_tokens=figures.mean_tokens,
        mean_prompt_tokens=figures.mean_prompt_tokens,
        outcomes=figures.outcomes,
        terminations=figures.terminations,
        suites=suites,
        commands=commands,
        command_vocabulary=figures.command_vocabulary,
        lenient_calls=figures.lenient_calls,
        lenient_episodes=figures.lenient_episodes,
        previous=None if previous is None else PreviousSummary(
            iteration=previous.iteration, episodes=previous.episodes, pass_rate=previous.pass_rate,
            mean_turns=previous.mean_turns, mean_tokens=previous.mean_tokens),
        diversity=diversity or Diversity(),
        regressions=find_regressions(cells, previous, params) if previous is not None else [],
        recommendations=recommend(cells, modes, params, figures.skills, expected),
    )
