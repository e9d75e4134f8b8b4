"""Hand-made and random trajectories in the contract schemas, for tests and the speed benchmark."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clawloop.core.trajectory import EPISODE_SCHEMA, STEP_SCHEMA


def episode_row(episode_id: str, **fields: Any) -> dict[str, Any]:
    """One episodes row with plausible defaults (a failed, submitted episode); override any field."""
    row: dict[str, Any] = {
        "episode_id": episode_id, "task_id": episode_id.split("-")[0], "suite": "pool",
        "skill": "files", "level": 1, "sample": 0, "policy_id": "p0", "iteration": 1,
        "reward": 0.0, "passed": False, "outcome": "failed", "termination": "submit", "error": None,
        "n_turns": 1, "n_format_errors": 0, "prompt_tokens": 100, "completion_tokens": 10,
        "duration_s": 1.0, "messages": "[]",
    }
    row.update(fields)
    if "passed" not in fields:
        row["passed"] = row["outcome"] == "passed"
    if "reward" not in fields:
        row["reward"] = None if row["outcome"] in ("error", "skipped") else float(row["passed"])
    return row


def step_row(episode_id: str, step: int, command: str | None = None, exit_code: int | None = 0,
             **fields: Any) -> dict[str, Any]:
    """One steps row: a bash command (exit_code 0 by default) unless overridden."""
    row: dict[str, Any] = {
        "episode_id": episode_id, "step": step, "role": "assistant", "content": "",
        "tool": "bash" if command is not None else None, "command": command, "format_error": False,
        "exit_code": exit_code if command is not None else None, "output": "", "timed_out": False,
        "duration_s": 0.1, "tokens": 10,
    }
    row.update(fields)
    return row


def submit_row(episode_id: str, step: int) -> dict[str, Any]:
    """A submit step."""
    return step_row(episode_id, step, None, None, tool="submit")


def write_trajectories(out_dir: str | Path, episodes: Sequence[dict[str, Any]],
                       steps: Sequence[dict[str, Any]], part: int = 0) -> Path:
    """Write rows as `episodes-NNNNN.parquet` / `steps-NNNNN.parquet` with the contract schemas."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(list(episodes), schema=EPISODE_SCHEMA), out / f"episodes-{part:05d}.parquet")
    pq.write_table(pa.Table.from_pylist(list(steps), schema=STEP_SCHEMA), out / f"steps-{part:05d}.parquet")
    return out


COMMANDS = ("ls -la", "cat notes.txt", "grep -rn TODO .", "find . -name '*.py'", "wc -l data.csv",
            "sort names.txt", "mkdir -p out", "cp a.txt out/", "sed -i s/a/b/ f.txt", "nosuchcmd",
            "python3 fix.py", "tar xzf a.tgz", "cat /tests/test.sh", "echo done")


def random_tables(n_episodes: int, steps_per_episode: int = 10, seed: int = 0,
                  skills: Sequence[str] = ("files", "text", "search", "archives", "json", "git", "perms", "scripting"),
                  ) -> tuple[Any, Any]:
    """Random episodes and steps tables (pyarrow, contract schemas), vectorised for large sizes.

    Each episode has 1..2*steps_per_episode-1 steps (mean steps_per_episode); the last step of a
    submitted episode is a submit.
    """
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    n = n_episodes
    eids = np.array([f"t{i // 4:06d}-{i % 4}-r" for i in range(n)], dtype=object)
    nsteps = rng.integers(1, 2 * steps_per_episode, n).astype(np.int32)
    outcome = rng.choice(np.array(["passed", "failed", "error", "skipped"], dtype=object), n,
                         p=[0.45, 0.5, 0.04, 0.01])
    term = rng.choice(np.array(["submit", "no_tool_call", "max_turns", "timeout", "format_errors", "error"],
                               dtype=object), n, p=[0.7, 0.1, 0.1, 0.04, 0.04, 0.02])
    skill = rng.choice(np.array(list(skills), dtype=object), n)
    level = rng.integers(1, 6, n).astype(np.int32)
    nfmt = (rng.random(n) < 0.05).astype(np.int32)
    episodes = pa.table({
        "episode_id": eids, "task_id": [e.split("-")[0] for e in eids], "suite": np.full(n, "pool", dtype=object),
        "skill": skill, "level": level, "sample": (np.arange(n) % 4).astype(np.int32),
        "policy_id": np.full(n, "p0", dtype=object), "iteration": np.full(n, 1, dtype=np.int32),
        "reward": (outcome == "passed").astype(np.float64), "passed": outcome == "passed",
        "outcome": outcome, "termination": term, "error": pa.nulls(n, pa.string()),
        "n_turns": nsteps, "n_format_errors": nfmt,
        "prompt_tokens": rng.integers(200, 4000, n), "completion_tokens": rng.integers(20, 800, n),
        "duration_s": rng.random(n) * 30, "messages": np.full(n, "[]", dtype=object),
        "verifier_output": pa.nulls(n, pa.string()),
        "timing": pa.nulls(n, EPISODE_SCHEMA.field("timing").type),
    }, schema=EPISODE_SCHEMA)

    total = int(nsteps.sum())
    ep_index = np.repeat(np.arange(n), nsteps)
    starts = np.repeat(np.cumsum(nsteps) - nsteps, nsteps)
    step = (np.arange(total) - starts).astype(np.int32)
    last = step == nsteps[ep_index] - 1
    is_submit = last & (term[ep_index] == "submit")
    cmd_idx = rng.integers(0, len(COMMANDS), total)
    commands = np.array(COMMANDS, dtype=object)[cmd_idx]
    fmt = (rng.random(total) < 0.02) & ~is_submit
    has_cmd = ~is_submit & ~fmt
    exit_code = np.where(np.array(COMMANDS, dtype=object)[cmd_idx] == "nosuchcmd", 127,
                         np.where(rng.random(total) < 0.15, 1, 0)).astype(np.int32)
    timed_out = has_cmd & (rng.random(total) < 0.005)
    steps = pa.table({
        "episode_id": eids[ep_index], "step": step, "role": np.full(total, "assistant", dtype=object),
        "content": pa.nulls(total, pa.string()),
        "tool": pa.array(np.where(is_submit, "submit", np.where(has_cmd, "bash", None)), pa.string()),
        "command": pa.array(np.where(has_cmd, commands, None), pa.string()),
        "format_error": fmt,
        "format": pa.array(np.where(fmt, None, "tool_call"), pa.string()),
        "exit_code": pa.array(exit_code, pa.int32(), mask=~has_cmd),
        "output": pa.nulls(total, pa.string()), "timed_out": timed_out,
        "duration_s": rng.random(total), "tokens": rng.integers(5, 200, total).astype(np.int32),
    }, schema=STEP_SCHEMA)
    return episodes, steps
