"""Knobs of the diagnosis phase (params.yaml `diagnosis:`), import-light."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

FAILURE_MODES = (
    "format_error", "unknown_command", "error_ignored", "repeated_action", "timeout",
    "max_turns", "premature_submit", "wrong_result", "verifier_tamper", "infra_error",
)
"""The failure taxonomy's modes (clawloop.core.taxonomy classifies an episode into them)."""


class DiagnosisParams(BaseModel):
    """Thresholds of the report. The recommendation rule (`clawloop.phases.diagnose.capability.decide_level`),
    per skill over its cells with at least `min_episodes` graded episodes: a level whose Wilson high
    end is <= lower_ci_high steps the skill back below it; else the top level L raises it to L+1
    when its low end is >= raise_ci_low, and holds it at its frontier when not (the highest level
    passed at least once, else the lowest assessed); a skill without such a cell is `expand`. The next synthesis plan follows these recommendations: there is no second rule.
    """

    model_config = ConfigDict(extra="forbid")

    raise_ci_low: float = Field(0.4, ge=0, le=1)
    """Raise a skill's level when the Wilson 95% low end of its top level's pass rate reaches this:
    6 of the 8 fresh instances a skill (eval.fresh; 0.41), 5/8 is 0.31. At 0.7 (16 of 16 needed)
    nothing was ever raised."""
    lower_ci_high: float = Field(0.35, ge=0, le=1)
    """Lower a skill's level when the Wilson 95% high end of a level's pass rate is at most this:
    0 of 8 fresh instances (0.32); 1/8 is 0.47."""
    min_episodes: int = Field(4, ge=1)
    """A (skill, level) cell with fewer graded episodes carries no decision (too little evidence)."""
    max_level: int = Field(5, ge=1, le=10)
    """Highest level a recommendation may raise to (procedural generators have levels 1-5)."""
    regression_margin: float = Field(0.2, ge=0, le=1)
    """A cell regressed when its pass rate fell by more than this (both cells with enough episodes)..."""
    regression_min_episodes: int = Field(5, ge=1)
    """...each having at least this many graded episodes; or whatever the counts, when the intervals
    no longer overlap (current high end below the previous low end)."""
    known_skills: list[str] = Field(default_factory=list)
    """Skill families expected in the loop; those without episodes (like pool skills without
    episodes) are recommended `expand`."""
    top_commands: int = Field(20, ge=1)
    """How many of the most used commands the report lists."""
    examples: int = Field(5, ge=0)
    """Example episode ids kept per failure mode."""
    threads: int | None = Field(None, ge=1)
    """DuckDB threads (None: all cores)."""
    narrative: bool = False
    """Ask the loop model itself for a short narrative of the report (needs a policy)."""
    narrative_max_chars: int = Field(2000, ge=100)
    """The narrative is cut to this many characters."""
