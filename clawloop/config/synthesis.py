"""params.yaml `synthesis`: the budget, its split over the routines, and each routine's knobs.

Light on purpose (pydantic, the knobs, the failure-mode names): clawloop.config.params reads every
section through it, so every stage imports it; the code that runs the routines lives beside it
(steering.py, pool.py, procedural/, grounded/).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from clawloop.config.diagnosis import FAILURE_MODES
from clawloop.config.knobs import LEVELS, Knobs

ROUTINES = ("procedural", "hindsight", "proposer")
"""Every routine a budget share can name: the generators, and the agent-grounded two."""
GROUNDED = ("hindsight", "proposer")
"""The routines that run the current policy (grounded/): tasks from what the policy does or proposes."""


def _default_failure_knobs() -> dict[str, dict[str, Any]]:
    return {
        "unknown_command": {"names_with_spaces": True},  # `./my script.sh` unquoted exits 127
        "error_ignored": {"loud_broken_start": True},
        "wrong_result": {"distractors": 2},
        "premature_submit": {"more_steps": True},
    }


class CurriculumParams(BaseModel):
    """How the plan spends its budget (params.yaml `synthesis.curriculum.*`). The raise/hold/lower
    thresholds are the report's (`diagnosis.options`): the plan follows its recommendations."""

    model_config = ConfigDict(extra="forbid")

    floor_share: float = Field(0.03, ge=0, le=1)
    """Budget share every skill gets whatever its weakness (capped at 1 / number of skills)."""
    unknown_weakness: float = Field(1.0, ge=0, le=1)
    """Weakness assumed for a skill the report has no cells for (1 = treat as weakest)."""
    review_share: float = Field(0.25, ge=0, le=1)
    """Share of a skill's quota spent one level below its target, so earlier levels are kept."""
    stretch_share: float = Field(0.0, ge=0, le=1)
    """Share of a skill's quota spent one level above its target (above the highest start level
    before any report; never above max_level). SFT learns from a frontier task's reference
    replay though the policy fails it (probe label `frontier`), so the level the rule holds the
    skill below gets demonstrations before the policy passes it."""
    start_levels: list[int] = Field(default_factory=lambda: [1, 2])
    """Levels of a skill without data (iteration 1), budget spread evenly over them."""
    uniform_levels: list[int] = Field(default_factory=lambda: [1, 2, 3, 4, 5])
    """Levels the unconditioned plan (conditioning=False, the ablation) spreads over evenly."""
    max_level: int = Field(5, ge=1, le=5)
    """Highest level a skill may be raised to."""
    mode_threshold: float = Field(0.15, ge=0, le=1)
    """A failure mode turns on its knobs for a skill when at least this share of the skill's
    failed episodes show it."""
    mode_min_count: int = Field(2, ge=1)
    """... and at least this many episodes show it (one odd episode moves nothing)."""
    failure_knobs: dict[str, dict[str, Any]] = Field(default_factory=_default_failure_knobs)
    """Failure mode -> Knobs fields it switches on (see clawloop.config.knobs.Knobs)."""
    knob_fraction: float = Field(0.5, ge=0, le=1)
    """Share of a knobbed skill's tasks that get the knobs (the rest stay plain)."""
    conditioning: bool = True
    """Steer by the report; False gives the uniform plan (params.yaml `synthesis.conditioning`,
    which `SynthesisParams.steering` puts here)."""

    @model_validator(mode="after")
    def _check(self) -> CurriculumParams:
        for name in ("start_levels", "uniform_levels"):
            levels = getattr(self, name)
            if not levels or any(lv not in LEVELS for lv in levels):
                raise ValueError(f"{name}: levels must be a non-empty list within 1-5")
        if self.review_share + self.stretch_share > 1:
            raise ValueError(f"review_share + stretch_share must be <= 1, got {self.review_share} + "
                             f"{self.stretch_share}")
        for mode, updates in self.failure_knobs.items():
            if mode not in FAILURE_MODES:
                raise ValueError(f"failure_knobs: unknown failure mode {mode!r}")
            try:
                Knobs(**updates)
            except ValidationError as e:
                raise ValueError(f"failure_knobs.{mode}: {e.errors()[0]['msg']}") from None
        return self


class ParaphraseParams(BaseModel):
    """Requests in the policy's own words (clawloop.phases.synthesize.paraphrase): a share of the
    procedural pool rewritten by the current policy, kept only when every name, path, number and
    quoted value survives and nothing specific is added."""

    model_config = ConfigDict(extra="forbid")

    share: float = Field(0.0, ge=0, le=1)
    """Share of the procedural pool's one-paragraph tasks offered to the policy for rewording; a
    refused rewording leaves the task as the generator wrote it. 0 = off (no model loaded)."""
    tries: int = Field(2, ge=1, le=8)
    """Samples per task until one passes the checks."""
    temperature: float = Field(0.8, ge=0)
    """Sampling temperature of the rewording (0 gives one wording per request, the same each try)."""
    max_new_tokens: int = Field(160, ge=16)
    """Longest rewording, in tokens."""
    min_change: float = Field(0.25, ge=0, le=1)
    """Least share of the wording that must change: 1 - word-set Jaccard with the original."""


class HindsightParams(BaseModel):
    """Knobs of hindsight relabeling."""

    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(6, ge=1)
    """Turns of an exploration episode."""
    command_timeout_s: float = Field(10.0, gt=0)
    """Timeout of one command (exploration and replays)."""
    temperature: float = Field(1.0, ge=0)
    """Sampling temperature of the exploration episodes."""
    max_new_tokens: int = Field(128, ge=1)
    """Longest reply of one exploration turn."""
    batch_size: int = Field(16, ge=1)
    """Exploration episodes stepped in lockstep."""
    levels: tuple[int, ...] = (1, 2, 3)
    """Levels of the procedural seeds when the report does not say."""
    skills: list[str] | None = None
    """Seed families (None: all available, git excepted: its index changes on every look)."""
    max_changes: int = Field(8, ge=1)
    """More essential changes than this make an unreadable task: rejected (too_many_changes)."""
    literal_chars: int = Field(400, ge=0)
    """Longest text an instruction may spell out."""
    literal_lines: int = Field(12, ge=0)
    """Most lines an instruction may spell out."""
    keep_untouched: bool = True
    """The verifier also checks that the seeded files the episode left alone are unchanged."""
    minimize: bool = True
    """Drop commands that changed nothing from the reference solution."""
    check_replay: bool = True
    """Replay the reference solution in a fresh sandbox and require the same final state."""
    instruction: Literal["template", "model"] = "template"
    """Who phrases the instruction: relabel.j2, or the loop model rephrasing it (checked)."""


class ProposerParams(BaseModel):
    """Knobs of the proposer."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(1.0, ge=0)
    """Sampling temperature of the proposals."""
    max_new_tokens: int = Field(1024, ge=1)
    """Longest proposal (tokens)."""
    batch_size: int = Field(8, ge=1)
    """Proposals generated in one batched call."""
    levels: tuple[int, ...] = (1, 2, 3)
    """Levels asked for when the report does not say."""
    skills: list[str] | None = None
    """Skills to propose for (None: every skill family)."""
    workdir: str = "/workspace"
    """The task's working directory, where its files are seeded."""
    max_files: int = Field(20, ge=0)
    """Most files a proposal may seed."""
    max_file_bytes: int = Field(65536, ge=1)
    """Largest seeded file."""
    max_steps: int = Field(30, ge=1)
    """Most commands in a proposal's reference solution."""
    max_instruction_chars: int = Field(2000, ge=1)
    """Longest instruction."""
    max_test_chars: int = Field(8000, ge=1)
    """Longest verifier test script."""
    avoid: int = Field(3, ge=0)
    """Instructions of earlier proposals for the same skill shown as 'make it different'."""


@dataclass(frozen=True)
class Forms:
    """How a procedural pool is worded and shaped beyond its plan: the share of draws given each form
    (clawloop.phases.synthesize.procedural.generate). Each share draws from an rng of its own keyed by the
    task's seed, so turning one on never moves the tasks another made; `Forms()` is the generators'
    terse phrasing, byte-identical to the pools made before any of these existed."""

    conversational: float = 0.0
    """rephrased as people write requests (register.restyle)"""
    answer: float = 0.0
    """asked to print the answer where the task allows it (builder: answer form)"""
    twins: float = 0.0
    """of the answer-form draws, also asked in the file form in the next slot of the same cell: the same
    workspace, the form named only by the instruction"""
    elsewhere: float = 0.0
    """whose shell starts in / (register.start_elsewhere)"""
    detailed: float = 0.0
    """written at length over several lines (register.in_detail)"""
    chained: float = 0.0
    """asking for two or three tasks in a row (procedural.chain)"""
    breadth: float = 0.0
    """built from their family's breadth intents where the level has some (skills: BREADTH)"""

    def __post_init__(self) -> None:
        for f in fields(self):
            share = getattr(self, f.name)
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"{f.name}: a share in [0, 1], got {share}")

    def without_twins(self) -> Forms:
        """The same forms, each draw on its own (samples whose tasks should be independent)."""
        return replace(self, twins=0.0)


class SynthesisParams(BaseModel):
    """Task synthesis: how many tasks, from which routines, steered by the last capability report."""

    model_config = ConfigDict(extra="forbid")

    tasks_per_iteration: int = Field(384, ge=1)
    """Tasks synthesized per iteration before validation (384: 120 SFT steps see each reference ~1.2
    times; docs/experiments/2026-12-05-named-checks-mistakes-and-pool-size.md)."""
    seed: int = 0
    """Base seed; iteration i uses seed + i."""
    conditioning: bool = True
    """Steer synthesis with the previous capability report (false = uniform plan, the ablation)."""
    routines: dict[str, float] = Field(default_factory=lambda: {"procedural": 1.0})
    """Share of the budget per routine: procedural, hindsight, proposer (ties of the split go to
    the routine named first)."""
    skills: list[str] | None = None
    """Restrict to these skill families (None = all)."""
    conversational: float = Field(0.5, ge=0, le=1)
    """Share of procedural tasks rephrased as people write requests: absolute paths in backticks, a
    polite frame (clawloop/phases/synthesize/procedural/register.py). 0 = the generators' terse phrasing only."""
    answer: float = Field(0.5, ge=0, le=1)
    """Share of procedural draws asked in the answer form where the task allows it (its result one
    file its last step writes: ~44% of the generators' tasks, so ~22% of a pool at 0.5): "print the
    answer" instead of "write it to out.txt", graded on the agent's last command's output as
    InterCode-Bash grades (clawloop/core/tasks/answer.py). 0 = files only (the former pools)."""
    elsewhere: float = Field(0.25, ge=0, le=1)
    """Share of procedural tasks whose agent starts in `/` instead of beside its files in /workspace
    (the instruction says where they are), as InterCode-Bash's agent starts in `/`
    (clawloop/phases/synthesize/procedural/register.py: start_elsewhere). 0 = always in /workspace."""
    twins: float = Field(0.0, ge=0, le=1)
    """Share of the answer-form draws whose file-form twin (the same workspace, asked to write the
    file) takes the next slot of their cell, so that only the instruction says which form is
    wanted (clawloop.config.synthesis.Forms). 0 = each draw in one form."""
    detailed: float = Field(0.0, ge=0, le=1)
    """Share of procedural tasks written at length as shell-core's are: a sentence of context, the
    request, a closing remark, hard-wrapped over several lines (register.in_detail), so that the
    pool is not only one short line each. 0 = the one-line forms only."""
    chained: float = Field(0.0, ge=0, le=1)
    """Share of procedural tasks that ask for two or three tasks in a row (the first is the slot's
    skill and level, the others any family at a level up to it): one workspace, every part's checks,
    the parts' reference steps in order (clawloop/phases/synthesize/procedural/chain.py), so the
    references teach more than one act. 0 = one task each."""
    breadth: float = Field(0.0, ge=0, le=1)
    """Share of procedural draws, at the levels whose family has breadth intents, built from those:
    the programs and flags InterCode-Bash's gold commands and shell-core's solutions use that the
    families' other intents never ask for (xargs -0, find -maxdepth, md5sum, comm, tee, grep -r...;
    benchmarks/breadth.py measures it, docs/experiments/2026-12-07-command-breadth.md; 0.5 covers the
    top uncovered uses). Off until measured on held-out pass rates (`dvc exp run -S synthesis.breadth=0.5`):
    0 = the families' other intents only."""
    paraphrase: ParaphraseParams = Field(default_factory=lambda: ParaphraseParams(tries=1))
    """A share of the procedural pool reworded by the current policy (phrasings no template file
    holds), checked to keep every name and value (clawloop/phases/synthesize/paraphrase.py). Off in
    the loop (share 0, one try): share 1.0 with 3 tries kept 94 of 384 and lost on shell-core
    (docs/experiments/2026-12-07-the-policy-rewords-its-requests.md)."""
    curriculum: CurriculumParams = Field(default_factory=lambda: CurriculumParams(stretch_share=0.25))
    """Thresholds of the procedural plan (clawloop.phases.synthesize.steering); the loop's stretch_share
    0.25 puts a quarter of each skill's tasks one level above its target
    (docs/experiments/2026-12-05-stretch-and-the-learned-fix.md)."""
    hindsight: HindsightParams = Field(default_factory=HindsightParams)
    """Hindsight relabeling options (clawloop.phases.synthesize.grounded.hindsight)."""
    proposer: ProposerParams = Field(default_factory=ProposerParams)
    """Proposer options (clawloop.phases.synthesize.grounded.proposer)."""

    @model_validator(mode="after")
    def _check(self) -> SynthesisParams:
        unknown = set(self.routines) - set(ROUTINES)
        if unknown:
            raise ValueError(f"routines: unknown routine {sorted(unknown)[0]!r}")
        if not any(v > 0 for v in self.routines.values()) or any(v < 0 for v in self.routines.values()):
            raise ValueError("routines: shares must be >= 0 with at least one > 0")
        return self

    def forms(self) -> Forms:
        """The wording and shape shares of the procedural routine."""
        return Forms(**{f.name: getattr(self, f.name) for f in fields(Forms)})

    def steering(self) -> CurriculumParams:
        """The curriculum thresholds with `conditioning` switched as this section says."""
        return self.curriculum.model_copy(update={"conditioning": self.conditioning})
