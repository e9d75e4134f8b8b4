"""The trajectory contract: two Parquet tables written by rollouts and read by diagnosis/training.

`episodes.parquet` has one row per episode, `steps.parquet` one row per assistant turn (the
command it ran and what came back). A rollout directory holds both (written in parts as
`episodes-00000.parquet`, `steps-00000.parquet`, ... so a crash loses at most one batch);
readers glob `episodes*.parquet` and `steps*.parquet`.
"""

from __future__ import annotations

import pyarrow as pa

TRAJECTORY_SCHEMA_VERSION = 1

OUTCOMES = ("passed", "failed", "error", "skipped")
"""Episode outcome: errors (harness/verifier broke) are never counted as failures."""

TERMINATIONS = ("submit", "no_tool_call", "max_turns", "timeout", "format_errors", "error")
"""Why the agent phase ended."""

EPISODE_SCHEMA = pa.schema([
    ("episode_id", pa.string()),        # unique: f"{task_id}-{sample}-{run tag}"
    ("task_id", pa.string()),
    ("suite", pa.string()),             # pool or benchmark name
    ("skill", pa.string()),
    ("level", pa.int32()),
    ("sample", pa.int32()),             # 0..k-1
    ("policy_id", pa.string()),         # checkpoint name or hash
    ("iteration", pa.int32()),          # loop iteration, -1 outside the loop
    ("reward", pa.float64()),           # verifier reward (0..1), null on error/skip
    ("passed", pa.bool_()),
    ("outcome", pa.string()),           # one of OUTCOMES
    ("termination", pa.string()),       # one of TERMINATIONS
    ("error", pa.string()),             # reason for error/skip, else null
    ("n_turns", pa.int32()),
    ("n_format_errors", pa.int32()),
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("duration_s", pa.float64()),
    ("messages", pa.string()),          # the whole conversation, JSON (chat format with tool calls)
    ("verifier_output", pa.string()),   # what the verifier printed (head and tail), null without a verdict
])

OPTIONAL_EPISODE_COLUMNS = frozenset({"verifier_output"})
"""Columns added after the first trajectories were written: readers accept parts without them."""

VERIFIER_OUTPUT_CHARS = 4000
"""Most characters of verifier output kept per episode (head and tail): enough to read why."""


def clip(text: str | None, limit: int = VERIFIER_OUTPUT_CHARS) -> str | None:
    """`text` cut to `limit` characters, keeping its head and tail (where errors and totals are)."""
    if text is None or len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"

STEP_SCHEMA = pa.schema([
    ("episode_id", pa.string()),
    ("step", pa.int32()),               # 0-based assistant turn index
    ("role", pa.string()),              # "assistant"
    ("content", pa.string()),           # raw reply text
    ("tool", pa.string()),              # "bash" | "submit" | other name | null when no valid call
    ("command", pa.string()),           # parsed bash command, else null
    ("format_error", pa.bool_()),       # the reply had no valid tool call
    ("exit_code", pa.int32()),          # null when no command ran
    ("output", pa.string()),            # truncated observation
    ("timed_out", pa.bool_()),
    ("duration_s", pa.float64()),       # command wall time
    ("tokens", pa.int32()),             # completion tokens of this reply
])
