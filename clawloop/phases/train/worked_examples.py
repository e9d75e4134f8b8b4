"""Worked examples for the playbook: the agent's own passed episodes, each condensed to its
instruction and bash commands with their exit codes (`load_examples`), per skill, shortest first.
clawloop.phases.train.playbook adds them within its token budget."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from clawloop.config.train import PlaybookParams
from clawloop.core.agent.harness import read_observation
from clawloop.core.agent.playbook import ExampleStep, WorkedExample
from clawloop.core.trajectory import episode_parts


def entry_id(*parts: str) -> str:
    """A playbook entry's id: a hash of what it says."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def load_examples(rollouts: Sequence[str | Path], params: PlaybookParams) -> dict[str, list[WorkedExample]]:
    """The agent's own passed episodes without format errors and with at most
    `max_example_steps` commands, condensed, per skill, shortest first (then by episode id)."""
    cols = ["episode_id", "skill", "passed", "n_format_errors", "messages"]
    by_skill: dict[str, dict[str, WorkedExample]] = defaultdict(dict)
    for _, rows in episode_parts(rollouts, cols):
        for r in rows:
            if not r["passed"] or r["n_format_errors"] or not r["skill"]:
                continue
            ex = condense(orjson.loads(r["messages"] or "[]"), r["episode_id"], params)
            if ex is not None:
                by_skill[r["skill"]].setdefault(example_key(ex), ex)
    return {s: sorted(d.values(), key=lambda e: (len(e.steps), sum(len(x.command) for x in e.steps),
                                                  e.episode_id))
            for s, d in sorted(by_skill.items())}


def example_key(ex: WorkedExample) -> str:
    """A worked example's entry id."""
    return entry_id("example", ex.instruction, *(s.command for s in ex.steps))


def condense(messages: list[dict[str, Any]], episode_id: str, params: PlaybookParams) -> WorkedExample | None:
    """A worked example from one episode's messages: the user instruction and each bash command
    with its exit code; None when it has no command or too many."""
    instruction = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "").strip()
    steps: list[ExampleStep] = []
    for i, m in enumerate(messages):
        for call in m.get("tool_calls") or [] if m.get("role") == "assistant" else []:
            fn = call.get("function", call)
            args = fn.get("arguments") or {}
            if isinstance(args, str):
                try:
                    args = orjson.loads(args) if args.strip() else {}
                except orjson.JSONDecodeError:
                    return None  # not a call this harness wrote
            if fn.get("name") != "bash" or not isinstance(args, dict) or not isinstance(args.get("command"), str):
                continue
            out = next((str(n.get("content") or "") for n in messages[i + 1:i + 2] if n.get("role") == "tool"), "")
            head, code = read_observation(out)
            steps.append(ExampleStep(command=args["command"], exit_code=code,
                                     output=head.strip()[: params.example_output_chars].strip()))
    if not instruction or not steps or len(steps) > params.max_example_steps:
        return None
    cut = params.example_instruction_chars
    text = " ".join(instruction.split())
    return WorkedExample(instruction=text if len(text) <= cut else text[: cut - 3].rstrip() + "...",
                         steps=steps, episode_id=episode_id)
