"""Reflection by the loop model itself: the policy reads its own episodes and proposes playbook edits.

Teacher-free, ACE-style (generator → reflector → curator, incremental deltas): after an iteration
the *same* policy reads a sample of its own held-in episodes (the probe's and the pool
evaluation's, never a held-out suite), grouped by failure mode and skill (the modes of
clawloop.core.taxonomy.classify on each episode's steps, the groups ordered by how often the
report saw them), and replies with a small JSON list of deltas, prompted by
clawloop/core/agent/templates/reflect.j2:

    {"edits": [{"op": "add", "skill": "csv", "text": "..."},          # a new tip line
               {"op": "add", "failure_mode": "error_ignored", "text": "..."},
               {"op": "revise", "id": "T2", "text": "..."},           # a current tip, reworded
               {"op": "remove", "id": "T1", "reason": "..."},         # a current entry dropped
               {"op": "harness", "field": "observation_chars", "value": 4000}]}

`parse_edits` reads a reply leniently (a ```json fence, bare JSON anywhere in the reply, a list
instead of {"edits": ...}, aliases such as "action"/"tip"/"mode"); `curate` checks each edit and
keeps it or drops it with the reason recorded: an unknown op, skill or failure mode, a tip that is
empty, too long or a duplicate, an id that names no current entry, a tip naming a task, path,
file, quoted value or number of a task it saw (clawloop.phases.train.guards.check_text), a harness
edit that raises a budget or names an unknown variant (guards.check_edits). Accepted tip edits go
into the playbook (clawloop.phases.train.playbook.build_playbook, within its token budget; judged
and pruned by the next report like any entry); accepted harness edits become candidates of the
development-split search (clawloop.phases.train.harness_search). When nothing valid comes back, the
rule-based tips of playbook_tips.yaml are used instead (`Reflection.fallback`).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clawloop.artifacts.diagnosis import FAILURE_MODES, CapabilityReport
from clawloop.config.train import ReflectionParams
from clawloop.core.agent.harness import render
from clawloop.core.agent.playbook import (
    FORMAT_HINTS,
    SYSTEM_VARIANTS,
    TOOL_VARIANTS,
    HarnessEdits,
    Playbook,
    PlaybookEntry,
)
from clawloop.core.agent.tool_calls import _first_value
from clawloop.phases.train.guards import (
    BUDGET_FIELDS,
    BudgetLimits,
    Specifics,
    check_budget_field,
    check_edits,
    check_text,
    specifics_of,
)
from clawloop.phases.train.reflect_episodes import (  # noqa: F401 (read_episodes, steps_of, modes_of: re-exported)
    condense,
    modes_of,
    read_episodes,
    sample,
    steps_of,
)
from clawloop.phases.train.tips import load_tips, mode_shares, skill_rates

Generate = Callable[[list[dict[str, Any]]], str]
"""One reply of the policy to one conversation (the train stage wraps `policy.generate`)."""

MODES = tuple(m for m in FAILURE_MODES if m != "infra_error")
"""The failure modes a tip may answer (an infrastructure error is no agent's fault)."""
LEARNABLE = {"format_hint": tuple(FORMAT_HINTS), "observation_chars": "a number of characters",
             "max_turns": "a number of turns (never above the current budget)",
             "command_timeout_s": "seconds (never above the current budget)",
             "tool_descriptions": TOOL_VARIANTS, "system_template": tuple(SYSTEM_VARIANTS)}
"""The harness fields a reflector may propose, with their choices (shown in the prompt)."""
_OPS = {"add": "add", "new": "add", "insert": "add", "create": "add",
        "revise": "revise", "update": "revise", "edit": "revise", "modify": "revise", "replace": "revise",
        "rewrite": "revise", "remove": "remove", "delete": "remove", "drop": "remove", "prune": "remove",
        "harness": "harness", "set": "harness", "config": "harness"}
_KEYS = {"op": ("op", "action", "operation", "type", "kind"),
         "text": ("text", "tip", "content", "rule", "advice", "line", "new_text"),
         "id": ("id", "entry", "entry_id", "target", "label", "tip_id"),
         "skill": ("skill", "skill_family"), "failure_mode": ("failure_mode", "mode", "failure"),
         "field": ("field", "setting", "name", "key"), "value": ("value", "new_value", "to"),
         "reason": ("reason", "why", "because")}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EditRecord(_Model):
    """One edit of the reflector's reply and what became of it."""

    edit: dict[str, Any]
    """As read from the reply (keys normalized)."""
    status: Literal["accepted", "dropped"]
    reason: str = ""
    """Why it was dropped (or what it did)."""


class Reflection(_Model):
    """runs/iter-N/playbook/reflection.json: the reflector's prompt, reply and verdicts."""

    iteration: int = Field(0, ge=0)
    reflector: Literal["model", "rules"] = "model"
    episodes: list[str] = Field(default_factory=list)
    """The held-in episodes shown (ids)."""
    prompt: list[dict[str, Any]] = Field(default_factory=list)
    reply: str = ""
    parse_error: str | None = None
    edits: list[EditRecord] = Field(default_factory=list)
    fallback: bool = False
    """No valid tip edit: the rule tips (playbook_tips.yaml) were used instead."""
    adds: list[PlaybookEntry] = Field(default_factory=list)
    """Accepted new tips, in the reply's order (the playbook keeps what fits its budget)."""
    revisions: dict[str, PlaybookEntry] = Field(default_factory=dict)
    """Id of a current tip → its accepted rewording."""
    removals: dict[str, str] = Field(default_factory=dict)
    """Id of a current entry → why the reflector removed it."""
    harness: list[HarnessEdits] = Field(default_factory=list)
    """Accepted harness edits: candidates of the development-split search."""
    harness_why: list[str] = Field(default_factory=list)

    @property
    def tip_edits(self) -> int:
        return len(self.adds) + len(self.revisions) + len(self.removals)


# --- the prompt and the reply -----------------------------------------------------------------------

def _labels(previous: Playbook | None) -> dict[str, PlaybookEntry]:
    """T1, T2, ... for the current tips; E1, ... for the current examples (what the prompt names)."""
    out: dict[str, PlaybookEntry] = {}
    for prefix, entries in (("T", previous.tips if previous else []), ("E", previous.examples if previous else [])):
        for i, e in enumerate(entries, 1):
            out[f"{prefix}{i}"] = e
    return out


def held_in_rates(episodes: Sequence[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """(passes, judged episodes) per skill over the held-in episodes only. The report's cells also
    count the held-out suites' episodes (their skills, e.g. InterCode's file systems, and their pass
    rates), which the reflector must not see or write tips for."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in episodes:
        if e.get("outcome") in ("passed", "failed"):
            cell = out[e.get("skill") or "unknown"]
            cell[0] += e.get("outcome") == "passed"
            cell[1] += 1
    return {k: (p, n) for k, (p, n) in out.items()}


def prompt(report: CapabilityReport, groups: list[dict[str, Any]], previous: Playbook | None,
           harness: Mapping[str, Any], params: ReflectionParams,
           rates: Mapping[str, tuple[int, int]]) -> list[dict[str, Any]]:
    """The reflector's conversation (one user turn, rendered from `params.template`); `rates` are
    the held-in pass counts per skill (`held_in_rates`)."""
    skills = sorted(((s, p, n) for s, (p, n) in rates.items() if n), key=lambda x: (x[1] / x[2], x[0]))
    modes = [(m.mode, m.count) for m in sorted(report.failure_modes, key=lambda m: (-m.count, m.mode))
             if m.count and m.mode in MODES]
    tips = [(label, e.skill or e.failure_mode, e.text) for label, e in _labels(previous).items() if e.kind == "tip"]
    shown = [{**g, "failed": [condense(e, params.episode_chars) for e in g["failed"]],
              "passed": [condense(e, params.episode_chars) for e in g["passed"]]} for g in groups]
    known = sorted(set(rates) | set(load_tips()["skills"]))
    text = render(params.template, skills=skills, modes=modes, episodes=report.episodes, tips=tips, groups=shown,
                  harness=dict(harness), fields={k: " | ".join(v) if isinstance(v, tuple) else v
                                                  for k, v in LEARNABLE.items()},
                  modes_known=MODES, skills_known=known, max_edits=params.max_edits)
    return [{"role": "user", "content": text}]


def _json_values(text: str) -> list[Any]:
    """Every JSON value the reply holds: its fenced blocks first, then bare objects/arrays."""
    out: list[Any] = []
    for m in re.finditer(r"```[ \t]*(?:json)?[ \t]*\n(.*?)(?:```|\Z)", text, re.DOTALL):
        with contextlib.suppress(ValueError, RecursionError):
            out.append(_first_value(m.group(1).strip()))
    if out:
        return out
    i = 0
    while i < len(text):
        j = min((k for k in (text.find("{", i), text.find("[", i)) if k != -1), default=-1)
        if j == -1:
            break
        try:
            out.append(_first_value(text[j:]))
            return out
        except (ValueError, RecursionError):
            i = j + 1
    return out


def _normalize(obj: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    low = {str(k).lower(): v for k, v in obj.items()}
    for key, aliases in _KEYS.items():
        for a in aliases:
            if a in low and low[a] not in (None, ""):
                out[key] = low[a]
                break
    if isinstance(out.get("op"), str):
        out["op"] = _OPS.get(out["op"].strip().lower(), out["op"])
    if "op" not in out:  # {"field": ..., "value": ...} is a harness edit; a bare text an add
        out["op"] = "harness" if "field" in out and "text" not in out else ("add" if "text" in out else None)
    return out


def parse_edits(text: str) -> tuple[list[dict[str, Any]], str | None]:
    """The edits of a reply (normalized dicts) and a parse error (None when some were found).
    Lenient: a fence or bare JSON, {"edits": [...]}, a list, or one edit object."""
    for value in _json_values(text):
        items: Any = value
        if isinstance(value, dict):
            items = next((value[k] for k in ("edits", "deltas", "changes", "operations") if k in value), [value])
        if isinstance(items, list):
            edits = [_normalize(x) for x in items if isinstance(x, dict)]
            if edits:
                return edits, None
    return [], "no JSON edit list found in the reply"


# --- curation -------------------------------------------------------------------------------------

def _tip_id(skill: str | None, mode: str | None, text: str) -> str:
    return hashlib.sha256("\x1f".join(("tip", "reflect", skill or "", mode or "", text)).encode()).hexdigest()[:16]


class _Dropped(Exception):
    """An edit refused, with the reason recorded."""


class _Curator:
    """What curation checks edits against: the report's figures, the previous playbook's entries,
    texts and retired ids, the current harness; and what the edits accepted so far touched."""

    def __init__(self, *, report: CapabilityReport, previous: Playbook | None, specifics: Specifics,
                 limits: BudgetLimits, iteration: int, params: ReflectionParams, reflection: Reflection,
                 skills: Iterable[str] | None = None) -> None:
        self.report, self.specifics, self.limits = report, specifics, limits
        self.iteration, self.params, self.reflection = iteration, params, reflection
        self.rates, self.shares = skill_rates(report), mode_shares(report)  # a tip's baseline, as the rule tips'
        self.known_skills = set(self.rates if skills is None else skills) | set(load_tips()["skills"])
        self.labels = _labels(previous)
        self.by_id = {e.id: e for e in (previous.entries if previous else [])}
        self.retired = set(previous.retired) if previous else set()
        self.texts = {e.text.strip().lower() for e in (previous.tips if previous else [])}
        self.current = previous.harness if previous else HarnessEdits()
        self.touched: set[str] = set()

    def curate(self, i: int, e: dict[str, Any]) -> None:
        """Record edit number `i` as accepted (applied to the reflection) or dropped."""
        try:
            if i >= self.params.max_edits:
                raise _Dropped(f"over max_edits ({self.params.max_edits})")
            op = e.get("op")
            handlers = {"add": self.add, "revise": self.revise, "remove": self.remove, "harness": self.harness}
            handler = handlers.get(op) if isinstance(op, str) else None
            if handler is None:
                raise _Dropped(f"unknown op {op!r}")
            status, reason = "accepted", handler(e)
        except _Dropped as why:
            status, reason = "dropped", str(why)
        self.reflection.edits.append(EditRecord(edit=e, status=status, reason=reason))

    def new_tip(self, e: dict[str, Any], skill: str | None, mode: str | None) -> tuple[str, str]:
        """(text, id) of the tip the edit writes, once its text passes the guards."""
        if not isinstance(e.get("text"), str) or not e["text"].strip():
            raise _Dropped("no text")
        text = " ".join(e["text"].split())
        if len(text) > self.params.max_tip_chars:
            raise _Dropped(f"text longer than {self.params.max_tip_chars} characters")
        if "<" in text and ">" in text and re.search(r"<[^<>]*(line|instruction|tip|skill|mode)[^<>]*>", text):
            raise _Dropped("the prompt's placeholder copied")
        if text.lower() in self.texts:
            raise _Dropped("duplicate of a current tip")
        why = check_text(text, self.specifics)
        if why:
            raise _Dropped(f"task-specific: {why}")
        return text, _tip_id(skill, mode, text)

    def add(self, e: dict[str, Any]) -> str:
        skill = e.get("skill") if isinstance(e.get("skill"), str) else None
        mode = e.get("failure_mode") if isinstance(e.get("failure_mode"), str) else None
        if skill is not None and skill not in self.known_skills:
            raise _Dropped(f"unknown skill {skill!r}")
        if mode is not None and mode not in MODES:
            raise _Dropped(f"unknown failure mode {mode!r}")
        if skill is None and mode is None:
            raise _Dropped("names no skill and no failure mode")
        text, eid = self.new_tip(e, skill, mode)
        if eid in self.retired:
            raise _Dropped("retired earlier (did not help)")
        report, iteration = self.report, self.iteration
        if skill is not None:
            p, n = self.rates.get(skill, (0, 0))
            base, ev = (p / n if n else 0.0), f"{skill}: {p}/{n} passed"
        else:
            base, ev = self.shares.get(mode or "", 0.0), f"{mode}: {report.mode_count(mode or '')} of {report.episodes} episodes"
        self.reflection.adds.append(PlaybookEntry(
            id=eid, kind="tip", skill=skill, failure_mode=mode if skill is None else None, text=text,
            added_iteration=iteration, baseline=base, evidence=f"reflector, iteration {iteration}; {ev}"))
        self.texts.add(text.lower())
        return f"tip for {skill or mode}"

    def target(self, e: dict[str, Any]) -> PlaybookEntry:
        """The current entry a revise or remove names, not edited yet."""
        key = str(e.get("id") or "").strip().strip("[]")
        old = self.labels.get(key.upper()) or self.by_id.get(key)
        if old is None:
            raise _Dropped(f"id {e.get('id')!r} names no current entry")
        if old.id in self.touched:
            raise _Dropped(f"entry {e.get('id')!r} already edited")
        return old

    def remove(self, e: dict[str, Any]) -> str:
        old = self.target(e)
        self.reflection.removals[old.id] = " ".join(str(e.get("reason") or "no reason given").split())[:200]
        self.touched.add(old.id)
        return f"removes {old.kind} {old.skill or old.failure_mode}"

    def revise(self, e: dict[str, Any]) -> str:
        old = self.target(e)
        if old.kind != "tip":
            raise _Dropped("only tips are revised (an example is the agent's own episode)")
        text, eid = self.new_tip(e, old.skill, old.failure_mode)
        self.reflection.revisions[old.id] = old.model_copy(update={
            "id": eid, "text": text, "added_iteration": self.iteration, "tokens": 0,
            "evidence": f"reflector, iteration {self.iteration}: revises {old.id}; {old.evidence}"})
        self.touched.add(old.id)
        self.texts.add(text.lower())
        return f"revises tip {old.skill or old.failure_mode}"

    def harness(self, e: dict[str, Any]) -> str:
        name = str(e.get("field") or "")
        if name in BUDGET_FIELDS:
            raise _Dropped(check_budget_field(name, e.get("value"), self.limits))
        if name not in LEARNABLE:
            raise _Dropped(f"unknown harness field {name!r}")
        try:
            edits = HarnessEdits.model_validate({**self.current.model_dump(), name: e.get("value")})
        except ValidationError as err:
            raise _Dropped(f"{name}: {err.errors()[0]['msg']}") from None
        why = check_edits(edits, self.limits)
        if why:
            raise _Dropped(why)
        if edits == self.current or edits in self.reflection.harness:
            raise _Dropped("no change to the current harness")
        self.reflection.harness.append(edits)
        self.reflection.harness_why.append(
            f"reflector: {' '.join(str(e.get('reason') or '').split())[:160] or 'no reason given'}")
        return f"harness candidate {edits.describe(self.current)}"


def curate(edits: list[dict[str, Any]], *, report: CapabilityReport, previous: Playbook | None,
           specifics: Specifics, limits: BudgetLimits, iteration: int, params: ReflectionParams,
           reflection: Reflection, skills: Iterable[str] | None = None) -> Reflection:
    """Check each edit (the guards) and record it in `reflection` as accepted or dropped; a tip may
    name one of `skills` (the held-in episodes'; default the report's) or a rule tip's skill."""
    curator = _Curator(report=report, previous=previous, specifics=specifics, limits=limits,
                       iteration=iteration, params=params, reflection=reflection, skills=skills)
    for i, e in enumerate(edits):
        curator.curate(i, e)
    return reflection


def reflect(generate: Generate, *, report: CapabilityReport, episodes: Sequence[Mapping[str, Any]],
            previous: Playbook | None, tasks: Sequence[Any], limits: BudgetLimits, iteration: int,
            harness: Mapping[str, Any], params: ReflectionParams | None = None) -> Reflection:
    """Ask the policy (`generate`) for playbook edits on its own held-in `episodes` (`read_episodes`
    of the probe's and the pool evaluation's rollouts) and curate them.

    The specifics the text guard refuses are collected from every held-in episode given and every
    validated task in `tasks`, not only the ones shown."""
    params = params or ReflectionParams()
    groups = sample(episodes, report, params)
    out = Reflection(iteration=iteration, reflector="model",
                     episodes=[e["episode_id"] for g in groups for e in (*g["failed"], *g["passed"])])
    if not groups:
        out.parse_error, out.fallback = "no held-in episode to reflect on", True
        return out
    rates = held_in_rates(episodes)
    out.prompt = prompt(report, groups, previous, harness, params, rates)
    out.reply = generate(out.prompt)
    edits, out.parse_error = parse_edits(out.reply)
    curate(edits, report=report, previous=previous, specifics=specifics_of(episodes, tasks), limits=limits,
           iteration=iteration, params=params, reflection=out, skills=rates)
    out.fallback = out.tip_edits == 0
    return out


def summary(reflection: Reflection | None) -> dict[str, Any]:
    """Flat figures for train.json."""
    if reflection is None or reflection.reflector != "model":
        return {}
    return {"reflector_edits": len(reflection.edits),
            "reflector_accepted": sum(r.status == "accepted" for r in reflection.edits),
            "reflector_dropped": sum(r.status == "dropped" for r in reflection.edits),
            "reflector_fallback": reflection.fallback}
