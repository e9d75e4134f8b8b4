"""Generator knobs: extra difficulty the curriculum turns on where a failure mode shows up.

Levels set the baseline difficulty of a family; knobs push one kind of difficulty onto any
level (a level-1 task whose file name has a space in it trains quoting without anything else).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

LEVELS = (1, 2, 3, 4, 5)
"""Difficulty levels every skill family generates."""


class Knobs(BaseModel):
    """Difficulty switches shared by every skill family (unused ones are ignored)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    names_with_spaces: bool = False
    """Awkward file names (spaces, leading dashes, unicode) even at low levels: trains quoting."""
    loud_broken_start: bool = False
    """The output goes into a directory that does not exist yet, so a careless first command
    fails loudly and must be noticed and recovered from (error_ignored)."""
    distractors: int = Field(0, ge=0, le=8)
    """Extra near-miss files beside the real ones: trains reading carefully (wrong_result)."""
    more_steps: bool = False
    """A follow-up step after the main one (backup copy, journal line): trains finishing the
    whole task before stopping (premature_submit)."""

    def active(self) -> list[str]:
        """Names of the knobs that change anything, for tags and manifests."""
        out = [k for k in ("names_with_spaces", "loud_broken_start", "more_steps") if getattr(self, k)]
        if self.distractors:
            out.append(f"distractors={self.distractors}")
        return out

    def merged(self, other: Knobs) -> Knobs:
        """Both knobs' difficulty at once (booleans or-ed, counts maxed)."""
        return Knobs(
            names_with_spaces=self.names_with_spaces or other.names_with_spaces,
            loud_broken_start=self.loud_broken_start or other.loud_broken_start,
            distractors=max(self.distractors, other.distractors),
            more_steps=self.more_steps or other.more_steps,
        )


NO_KNOBS = Knobs()
