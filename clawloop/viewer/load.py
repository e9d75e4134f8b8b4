"""Episodes for the viewer, read from whatever an evaluation left behind.

Two layouts exist: rollout directories (`episodes*.parquet` + `steps*.parquet`, written by the
loop's stages and `clawloop eval --agent model --out DIR`) and `episodes.jsonl` (EpisodeRecord
lines, written by `clawloop eval --out DIR` for every agent). Both become the same
plain dicts, so the page has one shape to draw. Failure modes come from the diagnosis's own
reference rules (`taxonomy.classify`), so the viewer and the report never disagree on them.

Artifacts may come from a stranger (a DVC remote): each is checked against the schema `clawloop
check` uses (`check_trajectories`, `check_records`) and the fields drawn here against their types
before anything is rendered, so a malformed one ends in one line naming the file and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from clawloop.core.io import iter_jsonl
from clawloop.core.taxonomy import classify
from clawloop.errors import ClawloopError, validated, where

SUMMARY_KEYS = ("id", "task_id", "sample", "suite", "skill", "level", "outcome", "reward", "termination",
                "n_turns", "modes", "iteration", "title")
"""What the episode list needs for filtering and display; the rest loads on demand."""


def _instruction(messages: list[dict[str, Any]]) -> str:
    """The task as the agent saw it: the first user message (the system prompt is the harness's)."""
    for m in messages:
        if m.get("role") == "user":
            content = m.get("content")
            return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return ""


def _title(instruction: str, task_id: str) -> str:
    first = instruction.strip().splitlines()[0] if instruction.strip() else task_id
    return first[:120]


def _rows(part: Path, required: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rows of a Parquet part that `clawloop check` passes, with `required` never null."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clawloop.core.trajectory import check_trajectories  # the schema `clawloop check` holds it to

    check_trajectories(part)
    try:
        rows = pq.read_table(part).to_pylist()
    except (pa.ArrowException, OSError) as e:
        raise ClawloopError(f"{part}: not a readable Parquet file ({str(e).splitlines()[0] if str(e) else e})") from None
    for n, row in enumerate(rows):
        for col in required:
            if row.get(col) is None:
                raise ClawloopError(f"{part}: {col}: null in row {n}")
    return rows


def _messages(part: Path, row: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation of an episode row: a JSON list of message objects ([] when the text is
    not JSON, as before: the commands still show)."""
    try:
        messages = json.loads(row.get("messages") or "[]")
    except json.JSONDecodeError:
        return []
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ClawloopError(f"{part}: messages: episode {row['episode_id']!r}: expected a JSON list of message objects")
    return messages


def _parquet_episodes(parts: list[Path]) -> Iterator[dict[str, Any]]:
    steps: dict[str, list[dict[str, Any]]] = {}
    for part in sorted({p.with_name(p.name.replace("episodes", "steps", 1)) for p in parts}):
        if part.exists():
            for row in _rows(part, ("episode_id", "step")):
                steps.setdefault(row["episode_id"], []).append(row)
    for part in parts:
        for row in _rows(part, ("episode_id", "task_id", "outcome")):
            eid = row["episode_id"]
            ep_steps = sorted(steps.get(eid, []), key=lambda s: s["step"])
            instruction = _instruction(_messages(part, row))
            yield {
                "id": eid, "task_id": row["task_id"], "sample": row.get("sample") or 0,
                "suite": row.get("suite") or "", "skill": row.get("skill") or "", "level": row.get("level"),
                "outcome": row["outcome"], "reward": row.get("reward"), "termination": row.get("termination"),
                "n_turns": row.get("n_turns") or len(ep_steps), "modes": sorted(classify(row, ep_steps)),
                "iteration": row.get("iteration"), "title": _title(instruction, row["task_id"]),
                "instruction": instruction, "error": row.get("error"),
                "verifier_output": row.get("verifier_output"), "policy_id": row.get("policy_id"),
                "duration_s": row.get("duration_s"),
                "steps": [{k: s.get(k) for k in ("step", "content", "tool", "command", "exit_code", "output",
                                                  "timed_out", "format_error", "duration_s")} for s in ep_steps],
            }


class _StepLine(BaseModel):
    """A step of an episodes.jsonl line, as far as the viewer draws it."""

    model_config = ConfigDict(extra="allow")

    command: str | None = None
    exit_code: int | None = None
    output: str | None = None
    timed_out: bool | None = None
    duration_s: float | None = None


class _RecordLine(BaseModel):
    """An episodes.jsonl line (EpisodeRecord.to_json), as far as the viewer draws it: the fields
    it reads, with their types (a string where steps belong crashed the page's build)."""

    model_config = ConfigDict(extra="allow")

    task_id: str
    name: str | None = None
    suite: str | None = None
    skill: str | None = None
    level: int | None = None
    agent: str | None = None
    outcome: str
    reward: float | None = None
    reason: str | None = None
    duration_s: float | None = None
    verifier_output: str | None = None
    instruction: str | None = None
    steps: list[_StepLine] | None = None


def _jsonl_episodes(path: Path) -> Iterator[dict[str, Any]]:
    """EpisodeRecord lines: commands with outputs and the verifier's, but no conversation."""
    from clawloop.core.trajectory import check_records  # the schema `clawloop check` holds it to

    check_records(path)  # every line an object with a known outcome
    for n, (lineno, obj) in enumerate(iter_jsonl(path)):
        r = validated(_RecordLine, obj, where(path, line=lineno)).model_dump()
        steps = [{"step": i, "command": s.get("command"), "exit_code": s.get("exit_code"),
                  "output": s.get("output"), "timed_out": s.get("timed_out"), "tool": "bash",
                  "format_error": False, "duration_s": s.get("duration_s"), "content": None}
                 for i, s in enumerate(r.get("steps") or [])]
        termination = "error" if r.get("outcome") in ("error", "skipped") else "submit"
        row = {"outcome": r.get("outcome"), "termination": termination, "n_format_errors": 0}
        instruction = r.get("instruction") or ""
        yield {
            "id": f"{r.get('task_id')}-{r.get('agent') or ''}-{n}", "task_id": r.get("task_id"), "sample": 0,
            "suite": r.get("suite") or "", "skill": r.get("skill") or "", "level": r.get("level"),
            "outcome": r.get("outcome"), "reward": r.get("reward"), "termination": termination,
            "n_turns": len(steps), "modes": sorted(classify(row, steps)), "iteration": None,
            "title": _title(instruction, r.get("name") or r.get("task_id") or ""),
            "instruction": instruction, "error": r.get("reason"), "verifier_output": r.get("verifier_output"),
            "policy_id": r.get("agent"), "duration_s": r.get("duration_s"), "steps": steps,
        }


def load_episodes(path: str | Path) -> list[dict[str, Any]]:
    """Every episode under `path`: rollout Parquet parts (searched recursively), else episodes.jsonl.

    A directory holding both (`clawloop eval --agent model --out DIR`) is read from Parquet,
    which keeps the conversation and the replies the JSONL lacks.
    """
    path = Path(path)
    if path.is_file():
        if path.suffix == ".parquet":
            return list(_parquet_episodes([path]))
        return list(_jsonl_episodes(path))
    if not path.is_dir():
        raise ClawloopError(f"{path}: no such file or directory")
    parts = sorted(p for p in path.rglob("episodes*.parquet") if p.is_file())
    if parts:
        return list(_parquet_episodes(parts))
    jsonl = sorted(path.rglob("*.jsonl"))
    if jsonl:
        return [e for f in jsonl if _looks_like_records(f) for e in _jsonl_episodes(f)]
    raise ClawloopError(f"{path}: no episodes*.parquet or episodes.jsonl to show")


def _looks_like_records(path: Path) -> bool:
    """Whether a JSONL file holds EpisodeRecords (not a task pool or a probe table)."""
    for _, r in iter_jsonl(path):
        return isinstance(r, dict) and "outcome" in r and "task_id" in r and "steps" in r
    return False
