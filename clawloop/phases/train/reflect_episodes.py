"""What the reflector reads: the policy's own held-in episodes (`read_episodes`), each condensed to
a few lines (`condense`), grouped by failure mode and skill (`sample`). clawloop.phases.train.reflect
prompts with them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from clawloop.artifacts.diagnosis import CapabilityReport
from clawloop.config.train import ReflectionParams
from clawloop.core.agent.harness import read_observation
from clawloop.core.taxonomy import classify
from clawloop.core.trajectory import episode_parts


def read_episodes(rollouts: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The held-in episodes under `rollouts` (directories of episodes-*.parquet, with their
    steps-*.parquet when present): one dict per episode, `messages` decoded, `steps` its step rows."""
    import pyarrow.parquet as pq

    cols = ["episode_id", "task_id", "skill", "level", "passed", "outcome", "termination", "n_format_errors",
            "messages"]
    out: list[dict[str, Any]] = []
    for f, rows in episode_parts(rollouts, cols):
        steps: dict[str, list[dict[str, Any]]] = defaultdict(list)
        sf = f.with_name(f.name.replace("episodes", "steps", 1))
        if sf.is_file():
            for s in pq.read_table(sf).to_pylist():
                steps[s["episode_id"]].append(s)
        for r in rows:
            r["messages"] = orjson.loads(r["messages"] or "[]")
            r["steps"] = (sorted(steps[r["episode_id"]], key=lambda s: s["step"]) if r["episode_id"] in steps
                          else steps_of(r["messages"]))
            out.append(r)
    return sorted(out, key=lambda r: r["episode_id"])


def steps_of(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Step rows rebuilt from a conversation (a part written without its steps table): each
    assistant turn's tool, command and the exit code of the tool turn after it."""
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        calls = m.get("tool_calls") or []
        fn = calls[0].get("function", calls[0]) if calls else {}
        args = fn.get("arguments") if isinstance(fn.get("arguments"), dict) else {}
        obs = next((str(n.get("content") or "") for n in messages[i + 1:i + 2] if n.get("role") == "tool"), None)
        out.append({"step": len(out), "tool": fn.get("name"), "command": args.get("command"),
                    "content": m.get("content"), "format_error": not calls,
                    "exit_code": read_observation(obs or "")[1], "output": obs,
                    "timed_out": "timed out after" in (obs or "")})
    return out


def modes_of(episode: Mapping[str, Any]) -> set[str]:
    """The failure modes of one episode (the diagnosis's taxonomy)."""
    return classify(episode, episode.get("steps") or []) - {"infra_error"}


def condense(episode: Mapping[str, Any], limit: int) -> str:
    """One episode as a few lines: the task, each turn (command and exit code, or the reply without
    a valid call), how it ended; cut to `limit` characters."""
    msgs = episode.get("messages") or []
    task = next((str(m.get("content") or "") for m in msgs if m.get("role") == "user"), "")
    parts = [f"Task: {' '.join(task.split())[:240]}"]
    for st in steps_of(msgs):
        if st["format_error"]:
            parts.append(f"reply without a valid tool call: {' '.join(str(st['content'] or '').split())[:100]!r}")
            continue
        if st["tool"] == "submit":
            parts.append("submit")
            continue
        output, code = read_observation(st["output"] or "")
        head = " ".join(output.split())[:80] if code is not None else ""
        parts.append(f"$ {st['command']} -> exit {'?' if code is None else code}" + (f": {head}" if head else ""))
    parts.append(f"ended by {episode.get('termination')}, {episode.get('outcome')}")
    text = " | ".join(parts)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def sample(episodes: Sequence[Mapping[str, Any]], report: CapabilityReport,
           params: ReflectionParams) -> list[dict[str, Any]]:
    """The groups shown to the reflector: (failure mode, skill) of failed episodes, most frequent
    first (the report's examples of a mode first within a group), each with a passed episode of
    its skill when there is one; deterministic. An episode is shown once: one failing in several
    modes (a loop is max_turns and repeated_action at once) would otherwise fill several groups'
    slots (3 of 10 in a Qwen run), so a later group shows its others, and a group left with none
    gives its place to the next."""
    by_group: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    passed: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for e in episodes:
        skill = e.get("skill") or "unknown"
        if e.get("outcome") == "passed":
            passed[skill].append(e)
        elif e.get("outcome") == "failed":
            for m in sorted(modes_of(e)) or ["unclassified"]:
                by_group[(m, skill)].append(e)
    examples = {m.mode: set(m.examples) for m in report.failure_modes}
    order = sorted(by_group, key=lambda k: (-len(by_group[k]), -report.mode_count(k[0]), k))
    groups, shown_passed, shown = [], 0, set()
    for mode, skill in order:
        if len(groups) == params.groups:
            break
        eps = sorted((e for e in by_group[(mode, skill)] if e["episode_id"] not in shown),
                     key=lambda e: (e["episode_id"] not in examples.get(mode, ()), e["episode_id"]))
        if not eps:
            continue
        shown.update(e["episode_id"] for e in eps[: params.failed_per_group])
        g = {"mode": mode, "skill": skill, "count": len(by_group[(mode, skill)]),
             "failed": list(eps[: params.failed_per_group]), "passed": []}
        if shown_passed < params.passed and passed.get(skill):
            g["passed"] = [passed[skill].pop(0)]
            shown_passed += 1
        groups.append(g)
    rest = [e for skill in sorted(passed) for e in passed[skill]]
    for e in rest[: max(0, params.passed - shown_passed)]:
        groups.append({"mode": "passed", "skill": e.get("skill") or "unknown", "count": 1, "failed": [],
                       "passed": [e]})
    return groups
