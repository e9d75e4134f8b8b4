"""Episodes for the viewer, read from whatever an evaluation left behind.

Two layouts exist: rollout directories (`episodes*.parquet` + `steps*.parquet`, written by the
loop's stages and `clawloop eval --agent model --out DIR`) and `episodes.jsonl` (EpisodeRecord
lines, written by `clawloop eval --out FILE` for the oracle/no-op agents). Both become the same
plain dicts, so the page has one shape to draw. Failure modes come from the diagnosis's own
reference rules (`taxonomy.classify`), so the viewer and the report never disagree on them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clawloop.diagnosis.taxonomy import classify
from clawloop.errors import ClawloopError
from clawloop.io import iter_jsonl

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


def _parquet_episodes(parts: list[Path]) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    steps: dict[str, list[dict[str, Any]]] = {}
    for part in sorted({p.with_name(p.name.replace("episodes", "steps", 1)) for p in parts}):
        if part.exists():
            for row in pq.read_table(part).to_pylist():
                steps.setdefault(row["episode_id"], []).append(row)
    for part in parts:
        for row in pq.read_table(part).to_pylist():
            eid = row["episode_id"]
            ep_steps = sorted(steps.get(eid, []), key=lambda s: s["step"])
            try:
                messages = json.loads(row.get("messages") or "[]")
            except json.JSONDecodeError:
                messages = []
            instruction = _instruction(messages)
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


def _jsonl_episodes(path: Path) -> Iterator[dict[str, Any]]:
    """EpisodeRecord lines: commands with outputs and the verifier's, but no conversation."""
    for n, (_, r) in enumerate(iter_jsonl(path)):
        steps = [{"step": i, "command": s.get("command"), "exit_code": s.get("exit_code"),
                  "output": s.get("output"), "timed_out": s.get("timed_out"), "tool": "bash",
                  "format_error": False, "duration_s": s.get("duration_s"), "content": None}
                 for i, s in enumerate(r.get("steps") or [])]
        termination = "error" if r.get("outcome") in ("error", "skipped") else "submit"
        row = {"outcome": r.get("outcome"), "termination": termination, "n_format_errors": 0}
        instruction = r.get("instruction") or ""
        yield {
            "id": f"{r.get('task_id')}-{r.get('agent', '')}-{n}", "task_id": r.get("task_id"), "sample": 0,
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
