"""The rule-based playbook tips (playbook_tips.yaml) and the report figures they are picked by:
read by the playbook builder, the reflector (its fallback and its known skills) and the guards
(the tips' own words are generic, never task-specific)."""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from pathlib import Path

from clawloop.artifacts.diagnosis import CapabilityReport

TIPS = Path(__file__).parent / "playbook_tips.yaml"


@cache
def load_tips(path: Path = TIPS) -> dict[str, dict[str, list[str]]]:
    """The tip lines: {"failure_modes": {mode: [variants]}, "skills": {skill: [variants]}}."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {k: {key: [str(v) for v in vs] for key, vs in (data.get(k) or {}).items()}
            for k in ("failure_modes", "skills")}


def skill_rates(report: CapabilityReport) -> dict[str, tuple[int, int]]:
    """(passes, episodes) per skill, over every level of the report's cells."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for c in report.cells:
        out[c.skill][0] += c.passes
        out[c.skill][1] += c.episodes
    return {k: (p, n) for k, (p, n) in out.items()}


def mode_shares(report: CapabilityReport) -> dict[str, float]:
    """Each failure mode's count over the report's episodes."""
    n = max(report.episodes, 1)
    return {m.mode: m.count / n for m in report.failure_modes if m.mode != "infra_error"}
