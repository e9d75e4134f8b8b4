"""Steering: how the last capability report becomes the next pool's quotas and targets.

The procedural plan (`plan`): per skill the report's recommendation sets the target level (zone of
proximal development). The report decided it with the loop's one raise/hold/lower rule
(`clawloop.phases.diagnose.capability.decide_level`, thresholds in `diagnosis.options`) from held-in
evidence; the plan follows it and never decides again, so the two cannot disagree. A skill the
report has no evidence for (`expand`, or no recommendation) starts at `start_levels`. The budget
goes to skills in proportion to weakness (1 - pass rate at the deciding cell) on top of a floor
share, so no skill ever drops to zero. Failure modes
seen on a skill switch on generator knobs for part of its tasks (quoting trouble -> names with
spaces, ...). Without a report (iteration 1) the budget is spread evenly over skills and
`start_levels`; `conditioning=False` ignores the report (the ablation) and spreads it over
`uniform_levels`.

The grounded routines' conditioning (`weak_skills`, `failure_modes`, `plan_targets`): the
(skill, level) each hindsight seed or proposal aims at, and the modes a proposal is told about;
`grounded_skip` says when the report leaves a grounded routine nothing to work on.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from clawloop.artifacts.diagnosis import CapabilityReport, CellStats, Recommendation
from clawloop.config.knobs import NO_KNOBS, Knobs
from clawloop.config.synthesis import CurriculumParams
from clawloop.errors import ClawloopError
from clawloop.phases.synthesize.skills import families, family

Action = Literal["start", "raise", "hold", "lower", "uniform"]


@dataclass(frozen=True)
class SkillDecision:
    """What the curriculum decided for one skill, and why."""

    skill: str
    action: Action
    target_level: int
    weakness: float
    share: float
    reason: str
    assessed_level: int | None = None


@dataclass(frozen=True)
class Plan(Mapping[tuple[str, int], int]):
    """Quotas per (skill, level) (the plan reads as that mapping) plus knobs per skill."""

    quotas: dict[tuple[str, int], int]
    knobs: dict[str, Knobs] = field(default_factory=dict)
    knob_fraction: float = 0.5
    decisions: dict[str, SkillDecision] = field(default_factory=dict)

    def __getitem__(self, key: tuple[str, int]) -> int:
        return self.quotas[key]

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self.quotas)

    def __len__(self) -> int:
        return len(self.quotas)

    @property
    def total(self) -> int:
        return sum(self.quotas.values())

    def skill_total(self, skill: str) -> int:
        return sum(n for (s, _), n in self.quotas.items() if s == skill)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form for the pool manifest."""
        return {
            "total": self.total,
            "quotas": [{"skill": s, "level": lv, "n": n} for (s, lv), n in self.quotas.items()],
            "knobs": {s: k.model_dump() for s, k in self.knobs.items() if k != NO_KNOBS},
            "knob_fraction": self.knob_fraction,
            "decisions": {s: d.__dict__ for s, d in self.decisions.items()},
        }


# ------------------------------------------------------------------------------ inputs
def resolve_skills(skills: Sequence[str] | None) -> list[str]:
    """The skills to plan for, canonical order; unknown names raise ClawloopError."""
    known = list(families())
    if skills is None:
        return known
    chosen = [s.strip() for s in skills if s.strip()]
    for s in chosen:
        family(s)  # raises with the list of known skills
    if not chosen:
        raise ClawloopError("skills: empty list")
    return [s for s in known if s in chosen]


# ------------------------------------------------------------------------------ the plan
def largest_remainder(total: int, weights: Mapping[Any, float]) -> dict[Any, int]:
    """Split an integer `total` in proportion to `weights` (ties go to earlier keys)."""
    keys = list(weights)
    wsum = sum(max(0.0, w) for w in weights.values())
    if total <= 0 or not keys:
        return dict.fromkeys(keys, 0)
    if wsum <= 0:
        weights = dict.fromkeys(keys, 1.0)
        wsum = float(len(keys))
    exact = {k: total * max(0.0, weights[k]) / wsum for k in keys}
    out = {k: int(exact[k]) for k in keys}
    left = total - sum(out.values())
    order = sorted(keys, key=lambda k: (-(exact[k] - out[k]), keys.index(k)))
    for k in order[:left]:
        out[k] += 1
    return out


def _follow(skill: str, rec: Recommendation | None, p: CurriculumParams) -> SkillDecision:
    """The report's recommendation for one skill as a plan decision (the report decided, with the one
    rule `clawloop.phases.diagnose.capability.decide_level`; the plan does not decide again)."""
    if rec is None or rec.action == "expand" or rec.pass_rate is None:
        why = rec.reason if rec is not None else "no recommendation"
        return SkillDecision(skill, "start", min(p.start_levels), p.unknown_weakness, 0.0,
                             f"no evidence yet ({why}): start levels")
    target = max(1, min(rec.level, p.max_level))
    return SkillDecision(skill, rec.action, target, 1.0 - rec.pass_rate, 0.0, rec.reason,
                         assessed_level=rec.assessed_level)


def _level_weights(d: SkillDecision, p: CurriculumParams) -> dict[int, float]:
    """Level -> weight of a skill's quota: the target (or the start levels), a review share one
    below, a stretch share one above; each share is of the whole quota."""
    if d.action == "uniform":
        return {lv: 1.0 for lv in p.uniform_levels}
    if d.action == "start":
        levels = sorted(set(p.start_levels))
        weights = dict.fromkeys(levels, 1.0 / len(levels))
    else:
        weights = {d.target_level: 1.0}
        if d.target_level > 1 and p.review_share > 0:
            weights = {d.target_level: 1.0 - p.review_share, d.target_level - 1: p.review_share}
    top = max(weights)
    if p.stretch_share > 0 and top < p.max_level:
        main = [lv for lv in weights if d.action == "start" or lv == top]
        for lv in main:
            weights[lv] -= p.stretch_share / len(main)
        weights[top + 1] = p.stretch_share
    return weights


def _knobs_for(skill: str, report: CapabilityReport, cells: list[CellStats], p: CurriculumParams) -> Knobs:
    """Knobs switched on by the failure modes this skill shows often enough."""
    failed = sum(c.episodes - c.passes for c in cells)
    knobs = NO_KNOBS
    for m in report.failure_modes:
        updates = p.failure_knobs.get(m.mode)
        if not updates:
            continue
        if m.by_skill:
            count = m.by_skill.get(skill, 0)
            hit = count >= p.mode_min_count and failed > 0 and count / failed >= p.mode_threshold
        else:  # no per-skill counts: the global share decides for every skill
            hit = m.count >= p.mode_min_count and m.share >= p.mode_threshold
        if hit:
            knobs = knobs.merged(Knobs(**updates))
    return knobs


def plan(report: CapabilityReport | None, budget: int, params: CurriculumParams | None = None,
         skills: Sequence[str] | None = None) -> Plan:
    """Quotas per (skill, level) summing to `budget`, and knobs per skill (see module doc)."""
    p = params or CurriculumParams()
    if budget < 0:
        raise ClawloopError(f"budget: must be >= 0, got {budget}")
    names = resolve_skills(skills)
    decisions: dict[str, SkillDecision] = {}
    knobs: dict[str, Knobs] = {}
    recs = {r.skill: r for r in (report.recommendations if report else [])}
    for s in names:
        if not p.conditioning:
            decisions[s] = SkillDecision(s, "uniform", max(p.uniform_levels), 1.0, 0.0,
                                         "conditioning off: uniform over skills and levels")
            continue
        decisions[s] = _follow(s, recs.get(s), p)
        if report is not None:
            knobs[s] = _knobs_for(s, report, [c for c in report.cells if c.skill == s], p)

    # shares: a floor for everyone, the rest by weakness
    n = len(names)
    floor = min(p.floor_share, 1.0 / n)
    weak = {s: decisions[s].weakness for s in names}
    wsum = sum(weak.values())
    shares = {s: floor + (1.0 - n * floor) * (weak[s] / wsum if wsum > 0 else 1.0 / n) for s in names}
    per_skill = largest_remainder(budget, shares)
    if budget >= n:  # coverage never drops to zero: take from the largest quota
        for s in names:
            if per_skill[s] == 0:
                donor = max(names, key=lambda k: per_skill[k])
                per_skill[donor] -= 1
                per_skill[s] = 1

    quotas: dict[tuple[str, int], int] = {}
    for s in names:
        d = decisions[s]
        decisions[s] = SkillDecision(d.skill, d.action, d.target_level, round(d.weakness, 4),
                                     round(shares[s], 4), d.reason, d.assessed_level)
        for lv, k in sorted(largest_remainder(per_skill[s], _level_weights(d, p)).items()):
            if k:
                quotas[(s, lv)] = k
    return Plan(quotas=quotas, knobs={s: k for s, k in knobs.items() if k != NO_KNOBS},
                knob_fraction=p.knob_fraction, decisions=decisions)


# ------------------------------------------------------------------ the grounded routines
def grounded_skip(routine: str, last: CapabilityReport | None) -> str | None:
    """Why `routine` has nothing to work on after the `last` report, or None to run it.

    Hindsight relabels the policy's own commands; a policy that ran none in its last evaluation
    (a base that writes prose) explores for minutes and makes no task."""
    if routine == "hindsight" and last is not None and last.command_vocabulary == 0:
        return "the last evaluation ran no command"
    return None


def weak_skills(report: CapabilityReport | None, known: list[str], k: int = 4) -> list[tuple[str, int, float]]:
    """(skill, level, pass rate) of the weakest cells among `known` skills, weakest first.

    A cell with episodes counts; per skill the lowest level among its weakest cells is kept.
    Recommendations to lower or hold a skill count as weak at the recommended level."""
    if report is None:
        return []
    best: dict[str, tuple[float, int]] = {}
    for c in report.cells:
        if c.skill in known and c.episodes > 0 and c.pass_rate < 1.0:
            cur = best.get(c.skill)
            if cur is None or (c.pass_rate, c.level) < cur:
                best[c.skill] = (c.pass_rate, c.level)
    for r in report.recommendations:
        if r.skill in known and r.action in ("lower", "hold") and r.skill not in best:
            best[r.skill] = (0.5, r.level)
    ranked = sorted(best.items(), key=lambda kv: (kv[1][0], kv[0]))
    return [(s, lvl, rate) for s, (rate, lvl) in ranked[:k]]


def failure_modes(report: CapabilityReport | None, k: int = 3) -> list[str]:
    """The most frequent failure modes of the report (infra errors left out)."""
    if report is None:
        return []
    modes = sorted((m for m in report.failure_modes if m.count > 0 and m.mode != "infra_error"),
                   key=lambda m: (-m.count, m.mode))
    return [m.mode for m in modes[:k]]


def plan_targets(report: CapabilityReport | None, known: list[str], n: int, rng: random.Random,
                 levels: tuple[int, ...] = (1, 2, 3)) -> list[tuple[str, int]]:
    """(skill, level) for each of n attempts: weak skills most (weighted by 1 - pass rate, at
    their weak level), a quarter spread over all skills so nothing is starved."""
    weak = weak_skills(report, known, k=len(known))
    out = []
    for _ in range(n):
        if weak and rng.random() < 0.75:
            weights = [1.0 - rate + 0.05 for _, _, rate in weak]
            skill, level, _ = rng.choices(weak, weights=weights)[0]
            out.append((skill, max(1, min(5, level))))
        else:
            out.append((rng.choice(known), rng.choice(levels)))
    return out
