"""CapabilityReport: what diagnosis writes and the curriculum reads (diagnosis.json).

Sits on the ground floor: synthesis imports it, diagnosis fills it, neither imports the other.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

REPORT_SCHEMA_VERSION = 1

FAILURE_MODES = (
    "format_error", "unknown_command", "error_ignored", "repeated_action", "timeout",
    "max_turns", "premature_submit", "wrong_result", "verifier_tamper", "infra_error",
)

Action = Literal["raise", "hold", "lower", "expand"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CellStats(_Model):
    """Pass statistics of one (skill, level) cell."""

    skill: str
    level: int
    episodes: int = Field(ge=0)
    passes: int = Field(ge=0)
    pass_rate: float = Field(ge=0, le=1)
    ci_low: float = Field(ge=0, le=1)
    """Wilson 95% interval, low end."""
    ci_high: float = Field(ge=0, le=1)


class FailureModeStats(_Model):
    """How often a failure mode occurred, with example episodes."""

    mode: str
    count: int = Field(ge=0)
    share: float = Field(ge=0, le=1)
    """Fraction of failed episodes showing this mode."""
    examples: list[str] = Field(default_factory=list)
    """Episode ids to read."""
    by_skill: dict[str, int] = Field(default_factory=dict)


class Diversity(_Model):
    """Pool diversity figures (so the pool cannot silently collapse)."""

    tasks: int = 0
    unique_instructions: int = 0
    skills: int = 0
    skill_entropy: float = 0.0
    """Shannon entropy (bits) of the skill distribution."""
    mean_level: float = 0.0


class Regression(_Model):
    """A cell whose pass rate fell against the previous report beyond its interval."""

    skill: str
    level: int
    previous: float
    current: float


class Recommendation(_Model):
    """What the next synthesis should do for one skill."""

    skill: str
    action: Action
    level: int
    """The level the next iteration should centre on."""
    reason: str


class CapabilityReport(_Model):
    """The capability report of one iteration (diagnosis.json)."""

    schema_version: int = REPORT_SCHEMA_VERSION
    iteration: int = 0
    policy_id: str = ""
    episodes: int = 0
    pass_rate: float = 0.0
    cells: list[CellStats] = Field(default_factory=list)
    failure_modes: list[FailureModeStats] = Field(default_factory=list)
    mean_turns: float = 0.0
    mean_tokens: float = 0.0
    diversity: Diversity = Field(default_factory=Diversity)
    regressions: list[Regression] = Field(default_factory=list)
    recommendations: list[Recommendation] = Field(default_factory=list)
    narrative: str | None = None

    def cell(self, skill: str, level: int) -> CellStats | None:
        for c in self.cells:
            if c.skill == skill and c.level == level:
                return c
        return None

    def mode_count(self, mode: str, skill: str | None = None) -> int:
        for m in self.failure_modes:
            if m.mode == mode:
                return m.count if skill is None else m.by_skill.get(skill, 0)
        return 0
