"""The playbook: harness-side learning, rendered into the system prompt of every rollout.

When the weights cannot (or should not) move, the loop's train stage (`train.method: playbook`
or `sft+playbook`) evolves a playbook instead of, or beside, a checkpoint: instruction lines per
skill and per failure mode, derived from the capability report, and a few of the agent's own
successful trajectories as worked examples, all within a hard token budget counted with the
policy's tokenizer. Teacher-free: the content comes from the report, the project's tip lines
(clawloop/phases/train/playbook_tips.yaml) and the agent's own rollouts.

A policy directory carries its playbook as `playbook.json` beside the weights (`POLICY_FILE`),
so whatever rolls a policy out (evaluation, the probe, `clawloop eval --model DIR`) renders it,
and the held-out gate promotes or rejects weights and playbook together. The playbook also
carries what the *harness* learned (`Playbook.harness`, a `HarnessEdits`: format-hint variant,
observation length, turn and command-time budgets, tool descriptions, system-template variant),
kept only after it beat the current harness on a held-in development split
(clawloop.phases.train.harness_search); `clawloop.core.agent.harness` applies it to every episode. This module is the
schema and its file I/O only; `clawloop.core.agent.harness` renders it (templates/playbook.j2) and
`clawloop.phases.train.playbook` builds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clawloop.errors import ClawloopError, validated

PLAYBOOK_SCHEMA_VERSION = 1
POLICY_FILE = "playbook.json"
"""The file name of a policy directory's playbook (and of the train stage's artifact)."""
PLAYBOOK_HEADER = "## Playbook"
"""First line of every rendered playbook block (templates/playbook.j2 starts with it), so a
system prompt's playbook can be cut off again (`strip_playbook`)."""
METHOD_HEADER = "## Method"
"""First line of the section a system-template variant adds after the plain system prompt
(templates/system_steps.j2), cut off by `strip_playbook` like the playbook block."""

FormatHint = Literal["tool_call", "json_fence", "short"]
"""A format-hint variant: a key of FORMAT_HINTS."""
FORMAT_HINTS = {"tool_call": "format_hint.j2", "json_fence": "format_hint_json.j2",
                "short": "format_hint_short.j2"}
"""Format-hint variants → templates (clawloop/core/agent/templates): the `<tool_call>` form (the
default), the ```json fence instruction models write zero-shot (lenient parsing accepts it), or
one line without any form. None shows a command the model could copy."""
SYSTEM_VARIANTS = {"plain": "system.j2", "steps": "system_steps.j2"}
"""System-template variants → templates: the plain prompt (the default) or the plain prompt
followed by a `## Method` section (look, act, check, submit)."""
TOOL_VARIANTS = ("default", "explicit")
"""Tool-description variants (clawloop.core.agent.tool_calls.tools_variant)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExampleStep(_Model):
    """One command of a worked example, with how it ended."""

    command: str = Field(min_length=1)
    """The bash command the agent ran."""
    exit_code: int | None = None
    """Its exit code (None: not recorded)."""
    output: str = ""
    """The head of its output, as shown in the example (may be empty)."""


class WorkedExample(_Model):
    """One of the agent's own successful episodes, condensed."""

    instruction: str = Field(min_length=1)
    """The task as the user turn gave it."""
    steps: list[ExampleStep] = Field(min_length=1)
    """The commands that solved it, in order (the final submit is implied)."""
    episode_id: str
    """The episode it comes from (a held-in rollout: probe or pool, never a held-out suite)."""


class PlaybookEntry(_Model):
    """One line of advice or one worked example."""

    id: str = Field(min_length=1)
    """Content hash of the entry (kind, key, text): a pruned entry is never re-added."""
    kind: Literal["tip", "example"]
    """tip: an instruction line; example: a worked example."""
    skill: str | None = None
    """The skill family it serves (None: a failure-mode tip for every skill)."""
    failure_mode: str | None = None
    """The failure mode a tip answers (None for skill tips and examples)."""
    text: str = ""
    """The instruction line of a tip (empty for an example)."""
    example: WorkedExample | None = None
    """The worked example (examples only)."""
    added_iteration: int = Field(ge=0)
    """The iteration whose train stage added it."""
    baseline: float = Field(ge=0, le=1)
    """What it has to improve, measured in the report it was last judged on: the skill's pass rate
    (skill entries) or the failure mode's share of episodes (failure-mode tips)."""
    evidence: str = ""
    """Why it was added or kept, from the report (e.g. "json: 1/9 passed")."""
    tokens: int = Field(0, ge=0)
    """Tokens its rendering adds to the playbook block (the policy's tokenizer)."""

    @model_validator(mode="after")
    def _shape(self) -> PlaybookEntry:
        if self.kind == "tip":
            if not self.text.strip():
                raise ValueError("text: a tip needs a non-empty text")
            if self.example is not None:
                raise ValueError("example: only entries of kind 'example' have one")
            if self.skill is None and self.failure_mode is None:
                raise ValueError("skill: a tip names a skill or a failure_mode")
        else:
            if self.example is None:
                raise ValueError("example: an entry of kind 'example' needs one")
            if self.skill is None:
                raise ValueError("skill: an example names its skill")
        return self


class HarnessEdits(_Model):
    """What the harness learned: each field None leaves the harness's own setting.

    A closed set of variants (no free text: nothing task-specific can ride in one) and budgets
    that only ever lower the harness's: `clawloop.core.agent.harness` applies `max_turns` and
    `command_timeout_s` as `min(edit, the harness's limit, the task's own limit)`, so even a
    hand-written playbook.json cannot raise a budget; the train stage refuses a proposal above
    params.yaml's `rollout` limits before trying it (clawloop.phases.train.guards)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_hint: FormatHint | None = None
    """The format-hint variant sent after a reply without a valid call (FORMAT_HINTS)."""
    observation_chars: int | None = Field(None, ge=100, le=16_000)
    """Most characters of command output shown to the model (head + tail kept)."""
    max_turns: int | None = Field(None, gt=0)
    """Most assistant turns: never above the harness's or the task's own limit."""
    command_timeout_s: float | None = Field(None, gt=0)
    """Timeout of one command: never above the harness's or the task's own limit."""
    tool_descriptions: Literal["default", "explicit"] | None = None
    """The tool-description variant (TOOL_VARIANTS)."""
    system_template: Literal["plain", "steps"] | None = None
    """The system-template variant (SYSTEM_VARIANTS)."""
    submit_check: bool | None = None
    """Answer the first submit after a failed command (or before any) with a note
    (clawloop.core.agent.harness.HarnessConfig.submit_check)."""
    repeat_resample: float | None = Field(None, gt=0, le=1.5)
    """Draw a reply that repeats the last command once more at this temperature
    (clawloop.core.agent.harness.HarnessConfig.repeat_resample)."""

    def changes(self, before: HarnessEdits | None = None) -> dict[str, tuple[Any, Any]]:
        """field → (before, after) for every field that differs from `before` (default: none set)."""
        before = before or HarnessEdits()
        return {k: (getattr(before, k), v) for k, v in self if v != getattr(before, k)}

    def change_lines(self, before: HarnessEdits | None = None) -> list[str]:
        """One 'format_hint: configured -> short' per changed field: `configured` is the harness's own
        setting (params.yaml `rollout`), which no edit overrides."""
        return [f"{k}: {'configured' if a is None else a} -> {'configured' if b is None else b}"
                for k, (a, b) in self.changes(before).items()]

    def describe(self, before: HarnessEdits | None = None) -> str:
        """'observation_chars: configured -> 4000; format_hint: configured -> short' (or 'no change')."""
        return "; ".join(self.change_lines(before)) or "no change"


class PrunedEntry(_Model):
    """An entry of the previous playbook dropped by this one, and why."""

    id: str
    kind: Literal["tip", "example"]
    skill: str | None = None
    failure_mode: str | None = None
    reason: str
    """e.g. "json pass rate 0.000 -> 0.000 (stayed)"."""


class Playbook(_Model):
    """runs/iter-N/playbook/playbook.json, and `playbook.json` in a policy directory."""

    schema_version: int = PLAYBOOK_SCHEMA_VERSION
    iteration: int = Field(0, ge=0)
    """The iteration whose train stage wrote it."""
    token_budget: int = Field(gt=0)
    """Most tokens the rendered block may take (a small model pays for each at every turn)."""
    tokens: int = Field(0, ge=0)
    """Tokens of the rendered block (`tokenizer`); never above token_budget."""
    tokenizer: str = ""
    """What counted them: the policy directory whose tokenizer was used, or "chars/4" (an
    estimate, for a policy without a local tokenizer)."""
    report: str = ""
    """The capability report it was derived from."""
    entries: list[PlaybookEntry] = Field(default_factory=list)
    """In rendering order: tips, then worked examples."""
    pruned: list[PrunedEntry] = Field(default_factory=list)
    """Entries of the previous playbook this one dropped (their skill did not improve)."""
    retired: list[str] = Field(default_factory=list)
    """Ids of every entry ever pruned: not tried again."""
    harness: HarnessEdits = Field(default_factory=HarnessEdits)
    """What the harness learned so far (kept after a paired win on the held-in development split)."""

    @model_validator(mode="after")
    def _check(self) -> Playbook:
        if self.schema_version != PLAYBOOK_SCHEMA_VERSION:
            raise ValueError(f"schema_version: {self.schema_version} is not the supported "
                             f"version {PLAYBOOK_SCHEMA_VERSION}")
        if self.tokens > self.token_budget:
            raise ValueError(f"tokens: {self.tokens} is over the token_budget {self.token_budget}")
        seen: set[str] = set()
        for i, e in enumerate(self.entries):
            if e.id in seen:
                raise ValueError(f"entries.{i}.id: {e.id!r} appears twice")
            seen.add(e.id)
        return self

    @property
    def tips(self) -> list[PlaybookEntry]:
        return [e for e in self.entries if e.kind == "tip"]

    @property
    def examples(self) -> list[PlaybookEntry]:
        return [e for e in self.entries if e.kind == "example"]


def parse_playbook(obj: Any, where: str) -> Playbook:
    """A Playbook from its JSON object; errors name `where` and the field (`entries.2.kind: ...`)."""
    if not isinstance(obj, dict):
        raise ClawloopError(f"{where}: expected a JSON object (a playbook)")
    return validated(Playbook, obj, where)


def read_playbook(path: str | Path) -> Playbook:
    """Read and check a playbook.json."""
    from clawloop.core.io import read_json

    return parse_playbook(read_json(path), str(path))


def write_playbook(path: str | Path, playbook: Playbook) -> None:
    """Write a playbook.json atomically."""
    from clawloop.core.io import write_json

    write_json(path, playbook.model_dump(mode="json"))


def policy_playbook(policy_dir: str | Path | None) -> Playbook | None:
    """The playbook a policy directory carries, or None (no directory, no playbook.json)."""
    if policy_dir is None:
        return None
    path = Path(policy_dir) / POLICY_FILE
    return read_playbook(path) if path.is_file() else None


def strip_playbook(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation with any playbook block (and a system variant's `## Method` section) cut
    from its system turn (what the weights see: SFT on the agent's own rollouts learns the plain
    prompt, the playbook stays harness-side)."""
    if not messages or messages[0].get("role") != "system":
        return messages
    content = str(messages[0].get("content") or "")
    cuts = [i for i in (content.find("\n\n" + h) for h in (METHOD_HEADER, PLAYBOOK_HEADER)) if i != -1]
    if not cuts:
        return messages
    cut = min(cuts)
    return [{**messages[0], "content": content[:cut]}, *messages[1:]]
