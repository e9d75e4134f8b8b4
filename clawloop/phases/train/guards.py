"""Guards on what a self-improving agent may write into its own harness.

The cautionary case: an agent that improves its own prompt writes hints for the tasks it saw
("the answer file is report.txt", "the count is 42") and raises its own budget. Two guards stand
between a proposal (the reflector's or the rule-based proposer's) and the playbook:

**Nothing task-specific** (`check_text`, for every tip line the reflector adds or revises). The
specifics are collected from everything the reflector could have read (`specifics_of`): the
held-in episodes' instructions, commands and command outputs, and the validated tasks' instructions
and workspace file names, plus the task ids and names. A text is refused, with the reason recorded,
when it contains

- a path: any absolute path other than the generic ones (`/workspace`, `/tmp`, `/dev/null`, ...),
  or a relative one (`a/b`) with a component that is a file name or a seen specific (a sed
  expression `s/OLD/NEW/g` is not a path);
- a file basename or directory name (4 characters or more) seen in a task (`report.txt`,
  `backups`), written as a word or a path, a quoted literal of an instruction or command
  (`'ERROR 42'`, also unquoted inside the text), or a number of one (above 10 and not a common
  mode such as 644/755), unless it is generic: in the project's own tip lines
  (playbook_tips.yaml, written for the skill families) or a common command name;
- a task's id or name;
- a request for more budget in words ("increase the command timeout to 15 seconds", "use more
  turns"): a tip is read by the agent, which cannot change its budgets, and the reflector's
  budget proposals go through `check_edits` as harness edits (measured: the frozen
  Qwen2.5-Coder-0.5B reflector wrote exactly this tip).

A variant field of `HarnessEdits` is a closed set of names (no free text), so the type is its
guard.

**No budget raised** (`check_edits`). A proposal whose `max_turns` or `command_timeout_s` is
above params.yaml's `rollout.max_turns` / `rollout.command_timeout_s`, or whose observation length
is outside `[min_observation_chars, max_observation_chars]`, is refused before it is tried; a
proposal naming a budget that is not learnable at all (`max_new_tokens`, the agent-time budget,
format errors allowed, reply length) is refused as such. Whatever a playbook.json says,
`clawloop.core.agent.harness.episode_limits` applies a budget edit as `min(edit, the harness's limit, the
task's own limit)`, so a budget is never raised past a task's own limit either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from clawloop.core.agent.playbook import HarnessEdits
from clawloop.phases.train.tips import load_tips

GENERIC_PATHS = frozenset({"/workspace", "/tmp", "/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr",
                           "/bin/sh", "/bin/bash", "/usr/bin/env"})
"""Absolute paths any shell advice may name."""
GENERIC_NUMBERS = frozenset({str(i) for i in range(11)} | {"100", "127", "400", "444", "500", "555", "600",
                                                           "640", "644", "664", "700", "750", "755", "775",
                                                           "777", "1000", "1024"})
"""Numbers any shell advice may name (small counts, exit codes, common modes)."""
_COMMAND_NAMES = """ls cat cp mv rm mkdir rmdir touch ln chmod chown stat file find xargs grep egrep sed
awk cut sort uniq wc head tail tr tee paste join comm diff cmp patch tar gzip gunzip zip unzip bzip2 xz
jq python python3 bash sh echo printf test read cd pwd env export date seq basename dirname realpath
readlink du df md5sum sha256sum git make kill ps sleep true false which type"""
COMMANDS = frozenset(_COMMAND_NAMES.split())
BUDGET_FIELDS = ("max_new_tokens", "episode_timeout_s", "agent_timeout_s", "max_format_errors",
                 "max_reply_chars")
"""Budgets that are not learnable at all (only rollout params set them)."""

_QUOTED = re.compile(r"'([^'\n]{1,200})'|\"([^\"\n]{1,200})\"|`([^`\n]{1,200})`")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")
_PATHLIKE = re.compile(r"(?<![\w:<>])(?:~|\.{1,2})?/?[\w.*+-]+(?:/[\w.*+-]*)+|(?<![\w:<>])/[\w.-]+")
_BASENAME = re.compile(r"(?<![\w/.-])[\w-]*[A-Za-z0-9_-]\.[A-Za-z][A-Za-z0-9]{0,7}(?:\.[A-Za-z0-9]{1,4})?(?![\w])")
_SED = re.compile(r"^[sy]/[^/]*/[^/]*/[a-z]*$")
_WORD = re.compile(r"[\w][\w.+-]*")
_BUDGET_ASK = re.compile(
    r"\b(increase|raise|extend|double|lengthen|more|longer|larger|bigger|higher)\b[^.;\n]{0,40}?"
    r"\b(time-?outs?|turns?|budgets?|tokens?|time limits?|seconds|steps|attempts|retries)\b"
    r"|\b(time-?outs?|turns?|budgets?|tokens?|time limits?)\b[^.;\n]{0,20}?\b(to|up to|at least)\s+\d+",
    re.IGNORECASE)


@cache
def generic_vocabulary() -> frozenset[str]:
    """Lower-cased words, names and literals of the project's own tip lines (playbook_tips.yaml,
    general shell advice per skill family) and common command names: never task-specific."""
    words: set[str] = set(COMMANDS) | {c for p in GENERIC_PATHS for c in p.strip("/").split("/")}
    for group in load_tips().values():
        for variants in group.values():
            for text in variants:
                words.update(w.lower().strip(".,;:") for w in _WORD.findall(text))
                words.update(b.lower() for b in _BASENAME.findall(text))
                words.update(next(g for g in m.groups() if g).lower() for m in _QUOTED.finditer(text))
    return frozenset(words)


@dataclass
class Specifics:
    """What is specific to the tasks the reflector could have seen, each with where it came from."""

    names: dict[str, str] = field(default_factory=dict)
    """Lower-cased file basenames (and path components) → origin."""
    literals: dict[str, str] = field(default_factory=dict)
    """Lower-cased quoted literals of instructions and commands → origin."""
    numbers: dict[str, str] = field(default_factory=dict)
    """Numbers (as written) → origin."""
    tasks: dict[str, str] = field(default_factory=dict)
    """Task ids and names → origin."""

    def add_text(self, text: str, origin: str, *, literals: bool = True) -> None:
        """The names, paths, numbers (and, for instructions and commands, quoted literals) of `text`."""
        generic = generic_vocabulary()
        for b in _BASENAME.findall(text):
            if b.lower() not in generic:
                self.names.setdefault(b.lower(), origin)
        for p in _PATHLIKE.findall(text):
            for part in p.strip("/").split("/"):
                if part and part.lower() not in generic and part not in (".", "..", "~") and len(part) > 2:
                    self.names.setdefault(part.lower(), origin)
        for n in _NUMBER.findall(text):
            if n not in GENERIC_NUMBERS:
                self.numbers.setdefault(n, origin)
        if literals:
            for m in _QUOTED.finditer(text):
                lit = next(g for g in m.groups() if g).strip()
                if len(lit) >= 2 and lit.lower() not in generic:
                    self.literals.setdefault(lit.lower(), origin)

    def add_task(self, task_id: str, name: str | None, origin: str) -> None:
        for key in (task_id, name):
            if key and len(key) >= 4:
                self.tasks.setdefault(key.lower(), origin)


def specifics_of(episodes: Iterable[Mapping[str, Any]], tasks: Iterable[Any] = ()) -> Specifics:
    """The specifics of held-in episodes (rows with `episode_id`, `task_id`, `messages` as a list:
    the user instruction, the commands of the assistant's calls, the tool outputs) and of tasks
    (clawloop.core.tasks.task.Task: id, name, instruction, workspace file paths)."""
    out = Specifics()
    for e in episodes:
        origin = f"episode {e.get('episode_id')}"
        out.add_task(str(e.get("task_id") or ""), None, origin)
        for m in e.get("messages") or []:
            role = m.get("role")
            if role == "user":
                out.add_text(str(m.get("content") or ""), origin)
            elif role == "tool":
                out.add_text(str(m.get("content") or ""), origin, literals=False)
            elif role == "assistant":
                for call in m.get("tool_calls") or []:
                    args = call.get("function", call).get("arguments")
                    if isinstance(args, dict) and isinstance(args.get("command"), str):
                        out.add_text(args["command"], origin)
    for t in tasks:
        origin = f"task {t.name or t.id[:12]}"
        out.add_task(t.id, t.name, origin)
        out.add_text(t.instruction, origin)
        for path in t.files:
            out.add_text(f"/{path.lstrip('/')}", origin, literals=False)
    return out


def check_text(text: str, specifics: Specifics) -> str | None:
    """Why `text` (a tip line) is refused as task-specific, or None when it is generic."""
    generic = generic_vocabulary()
    low = text.lower()
    if m := _BUDGET_ASK.search(text):
        return f"asks for more budget ({m.group(0)!r}): budgets are not learnable upward"
    for key, origin in specifics.tasks.items():
        if key in low:
            return f"names a task ({key!r}, {origin})"
    for p in _PATHLIKE.findall(text):
        p = p.rstrip(".,;:")
        if _SED.match(p):
            continue
        if p.startswith(("/", "~")):
            if p.rstrip("/") not in GENERIC_PATHS:
                return f"names a path ({p!r})"
            continue
        parts = [x for x in p.split("/") if x]
        if any(x.lower() in specifics.names or (_BASENAME.fullmatch(x) and x.lower() not in generic)
               for x in parts):
            return f"names a path ({p!r})"
    for b in _BASENAME.findall(text):
        if b.lower() in specifics.names and b.lower() not in generic:
            return f"names the file {b!r} ({specifics.names[b.lower()]})"
    for w in _WORD.findall(text):
        w = w.strip(".,;:").lower()
        if len(w) >= 4 and w in specifics.names and w not in generic:
            return f"names {w!r} ({specifics.names[w]})"
    for lit, origin in specifics.literals.items():
        if re.search(rf"(?<!\w){re.escape(lit)}(?!\w)", low):
            return f"quotes the value {lit!r} ({origin})"
    for n in _NUMBER.findall(text):
        if n in specifics.numbers:
            return f"names the number {n} ({specifics.numbers[n]})"
    return None


@dataclass(frozen=True)
class BudgetLimits:
    """The budgets a harness edit may not exceed: params.yaml's `rollout` limits, and the range of
    observation lengths (`train.playbook.harness`)."""

    max_turns: int | None
    """rollout.max_turns (None: the tasks' own limits, which `episode_limits` applies anyway)."""
    command_timeout_s: float | None
    """rollout.command_timeout_s."""
    max_new_tokens: int | None = None
    """rollout.max_new_tokens (not learnable: named only in the refusal)."""
    min_observation_chars: int = 200
    max_observation_chars: int = 8000

    @classmethod
    def of_rollout(cls, rollout: Any) -> BudgetLimits:
        """The budgets of params.yaml's `rollout` section (observation range: the defaults)."""
        return cls(max_turns=rollout.max_turns, command_timeout_s=rollout.command_timeout_s,
                   max_new_tokens=rollout.max_new_tokens)


def check_edits(edits: HarnessEdits, limits: BudgetLimits) -> str | None:
    """Why a harness edit is refused as a budget raise (or out of range), or None."""
    if edits.max_turns is not None and limits.max_turns is not None and edits.max_turns > limits.max_turns:
        return (f"max_turns {edits.max_turns} is above rollout.max_turns {limits.max_turns}: "
                "budgets are not learnable upward")
    if (edits.command_timeout_s is not None and limits.command_timeout_s is not None
            and edits.command_timeout_s > limits.command_timeout_s):
        return (f"command_timeout_s {edits.command_timeout_s:g} is above rollout.command_timeout_s "
                f"{limits.command_timeout_s:g}: budgets are not learnable upward")
    n = edits.observation_chars
    if n is not None and not limits.min_observation_chars <= n <= limits.max_observation_chars:
        return (f"observation_chars {n} is outside [{limits.min_observation_chars}, "
                f"{limits.max_observation_chars}]")
    return None


def check_budget_field(name: str, value: Any, limits: BudgetLimits) -> str:
    """The refusal of a proposal that names a budget HarnessEdits does not hold."""
    cap = f" (rollout.max_new_tokens {limits.max_new_tokens} caps every reply)" if (
        name == "max_new_tokens" and limits.max_new_tokens is not None) else ""
    return f"{name} = {value!r}: not learnable, only params.yaml's rollout section sets it{cap}"
