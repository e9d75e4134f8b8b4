"""The trajectory contract: the episode and step records, and the two Parquet tables of their rows
(written by rollouts, read by diagnosis/training).

`episodes.parquet` has one row per episode, `steps.parquet` one row per assistant turn (the
command it ran and what came back). A rollout directory holds both (written in parts as
`episodes-00000.parquet`, `steps-00000.parquet`, ... so a crash loses at most one batch);
readers glob `episodes*.parquet` and `steps*.parquet`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from clawloop.core.io import iter_jsonl
from clawloop.errors import ClawloopError

TRAJECTORY_SCHEMA_VERSION = 1

OUTCOMES = ("passed", "failed", "error", "skipped")
"""Episode outcome: errors (harness/verifier broke) are never counted as failures."""

FRESH_SUITE = "fresh"
"""The evaluate stage's new instances of the pool's cells (clawloop.phases.synthesize.fresh), rolled out by
the trained policy: when present, the diagnosis decides on them alone."""

HELD_IN_SUITES = ("pool", "probe", FRESH_SUITE)
"""Suite names of the loop's held-in rollouts: the evaluate stage's sample of the validated pool and
its fresh instances, and the validate stage's probe. Only their episodes steer synthesis and
training (the diagnosis's evidence); every other suite is held out."""

TERMINATIONS = ("submit", "no_tool_call", "max_turns", "timeout", "format_errors", "error")
"""Why the agent phase ended."""

EPISODE_FIELDS = (  # (column, pyarrow type): EPISODE_SCHEMA
    ("episode_id", "string"),        # unique: f"{task_id}-{sample}-{run tag}"
    ("task_id", "string"),
    ("suite", "string"),             # pool or benchmark name
    ("skill", "string"),
    ("level", "int32"),
    ("sample", "int32"),             # 0..k-1
    ("policy_id", "string"),         # checkpoint name or hash
    ("iteration", "int32"),          # loop iteration, -1 outside the loop
    ("reward", "float64"),           # verifier reward (0..1), null on error/skip
    ("passed", "bool_"),
    ("outcome", "string"),           # one of OUTCOMES
    ("termination", "string"),       # one of TERMINATIONS
    ("error", "string"),             # reason for error/skip, else null
    ("n_turns", "int32"),
    ("n_format_errors", "int32"),
    ("prompt_tokens", "int64"),
    ("completion_tokens", "int64"),
    ("duration_s", "float64"),
    ("messages", "string"),          # the whole conversation, JSON (chat format with tool calls)
    ("verifier_output", "string"),   # what the verifier printed (head and tail), null without a verdict
    ("timing", "timing"),            # seconds per phase (EpisodeTiming, a struct of TIMING_PHASES), null when unknown
)

OPTIONAL_EPISODE_COLUMNS = frozenset({"verifier_output", "timing"})
"""Columns added after the first trajectories were written: readers accept parts without them."""

VERIFIER_OUTPUT_CHARS = 4000
"""Most characters of verifier output kept per episode (head and tail): enough to read why."""


def episode_parts(rollouts: Any, columns: list[str]) -> Any:
    """(file, rows) of every episodes*.parquet under `rollouts` (directories or files), with
    `columns` read; a part without them is a one-line ClawloopError naming the file."""
    import pyarrow.parquet as pq

    for root in rollouts:
        root = Path(root)
        for f in [root] if root.is_file() else sorted(root.glob("**/episodes*.parquet")):
            try:
                rows = pq.read_table(f, columns=columns).to_pylist()
            except Exception as e:  # noqa: BLE001 - a part without these columns is no rollout of this harness
                raise ClawloopError(f"{f}: not an episodes table ({str(e).splitlines()[0]})") from None
            yield f, rows


def clip(text: str | None, limit: int = VERIFIER_OUTPUT_CHARS) -> str | None:
    """`text` cut to `limit` characters, keeping its head and tail (where errors and totals are)."""
    if text is None or len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"

CALL_FORMATS = ("tool_call", "json_fence", "bare_json", "bash_fence")
"""How a step's valid call was written (the `format` column): inside `<tool_call>` tags, as a
```json fenced block, or as the whole reply in bare JSON (clawloop.core.agent.tool_calls parses them)."""
LENIENT_FORMATS = ("json_fence", "bare_json", "bash_fence")
"""The formats accepted only by lenient parsing (no `<tool_call>` tag in the reply)."""

OPTIONAL_STEP_COLUMNS = frozenset({"format"})
"""Step columns added after the first trajectories were written: readers accept parts without them."""

STEP_FIELDS = (  # (column, pyarrow type): STEP_SCHEMA
    ("episode_id", "string"),
    ("step", "int32"),               # 0-based assistant turn index
    ("role", "string"),              # "assistant"
    ("content", "string"),           # raw reply text
    ("tool", "string"),              # "bash" | "submit" | other name | null when no valid call
    ("command", "string"),           # parsed bash command, else null
    ("format_error", "bool_"),       # the reply had no valid tool call
    ("format", "string"),            # one of CALL_FORMATS (LENIENT_FORMATS: accepted without
                                     # <tool_call> tags); null without a call and for scripted agents
    ("exit_code", "int32"),          # null when no command ran
    ("output", "string"),            # truncated observation
    ("timed_out", "bool_"),
    ("duration_s", "float64"),       # command wall time
    ("tokens", "int32"),             # completion tokens of this reply
)

TIMING_PHASES = ("setup_s", "generation_s", "commands_s", "verification_s", "teardown_s", "total_s")
"""The fields of EpisodeTiming, the episode's `timing` column (float64 seconds each)."""

_SCHEMA_FIELDS = {"EPISODE_SCHEMA": EPISODE_FIELDS, "STEP_SCHEMA": STEP_FIELDS}


def __getattr__(name: str) -> Any:
    """EPISODE_SCHEMA and STEP_SCHEMA (pyarrow schemas of the fields above), built on first use:
    the records are imported by the CLI and the harness, which must not load pyarrow for them."""
    fields = _SCHEMA_FIELDS.get(name)
    if fields is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import pyarrow as pa

    timing = pa.struct([(phase, pa.float64()) for phase in TIMING_PHASES])
    schema = pa.schema([(column, timing if kind == "timing" else getattr(pa, kind)()) for column, kind in fields])
    globals()[name] = schema  # later look-ups find it without calling this again
    return schema


# ------------------------------------------------------------------------------ records
@dataclass
class Step:
    """One assistant turn of an episode (a row of STEP_SCHEMA): a model's reply, or one command
    of a scripted agent (oracle, no-op), with what came back."""

    step: int
    """0-based turn index."""
    content: str = ""
    """Raw reply text ("" for a scripted agent's command)."""
    tool: str | None = None
    command: str | None = None
    format_error: bool = False
    exit_code: int | None = None
    """None when no command ran."""
    output: str | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    tokens: int = 0
    format: str | None = None
    """How a model's valid call was written (CALL_FORMATS: "tool_call", or the lenient
    "json_fence" / "bare_json"); None without a call or for a scripted agent."""
    error_kind: str | None = None
    """Format error kind (not stored in Parquet; for callers)."""

    def to_row(self, episode_id: str) -> dict[str, Any]:
        """A row of STEP_SCHEMA."""
        return {"episode_id": episode_id, "step": self.step, "role": "assistant", "content": self.content,
                "tool": self.tool, "command": self.command, "format_error": self.format_error,
                "format": self.format, "exit_code": self.exit_code, "output": self.output, "timed_out": self.timed_out,
                "duration_s": self.duration_s, "tokens": self.tokens}


@dataclass
class EpisodeTiming:
    """Seconds an episode spent in each phase, as Harbor's TimingInfo per trial step (the `timing`
    column and episodes.jsonl key). Phases of one episode never overlap, so their sum is at most
    `total_s`; the rest is waiting (for the batch's other episodes, for a free thread)."""

    setup_s: float = 0.0
    """`Episode.begin`: the skip check, the sandbox opened, the task's files placed and its setup run."""
    generation_s: float = 0.0
    """Wall time of the batched generate calls the episode took part in (a repeat's redraw
    included), each charged in full to every episode of the batch: the time it waited for its
    replies, not its share of the policy's work (summed over a batch, it counts a call once per
    row). 0 for scripted agents."""
    commands_s: float = 0.0
    """The agent's commands, host wall time around each `exec` (a scripted agent: its whole act)."""
    verification_s: float = 0.0
    """`env.verify`: the verifier in its clean world."""
    teardown_s: float = 0.0
    """Closing the sandbox."""
    total_s: float = 0.0
    """From the start of `begin` to the sandbox closed."""

    def to_json(self) -> dict[str, float]:
        """The `timing` value of a row or an episodes.jsonl line (seconds to 0.1 ms)."""
        return {phase: round(getattr(self, phase), 4) for phase in TIMING_PHASES}

    @classmethod
    def from_json(cls, value: dict[str, Any] | None) -> EpisodeTiming | None:
        """The timing of a row or line (None where it has none: written before the field)."""
        return None if value is None else cls(**{p: float(value.get(p) or 0.0) for p in TIMING_PHASES})


@dataclass
class EpisodeRecord:
    """One episode of any agent (oracle, no-op or a model's rollout) on one task.

    `to_row` is its EPISODE_SCHEMA row (rollout Parquet), `to_json` its line in `clawloop eval`'s
    records (episodes.jsonl: the commands and the verdict, no conversation)."""

    task_id: str
    name: str
    """The task's name in its suite (its id for pools)."""
    suite: str
    skill: str
    level: int
    agent: str
    """oracle | noop | model."""
    outcome: Literal["passed", "failed", "error", "skipped"]
    reward: float | None = None
    reason: str | None = None
    """Why it errored or was skipped (or the verifier's note on a failure)."""
    duration_s: float = 0.0
    verifier_output: str | None = None
    """What the verifier printed (a rollout's clipped); None without a verdict."""
    steps: list[Step] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    """Tokens of a model agent's episode (0 for oracle and no-op)."""
    unloadable: bool = False
    """The task never loaded (reason says why): listed apart, never under a skill."""
    node: str | None = None
    """Hex id of the Ray node that ran the episode (`executor: ray`); None when it ran here."""
    benchmark: str | None = None
    """The benchmark of a format with fractional scores (clawgym, claw-eval-live), else None."""
    scores: dict[str, Any] | None = None
    """The grader's dimensions, for such a benchmark."""
    episode_id: str = ""
    """Unique id; "" gives `{task_id}-{sample}-{agent}` (a rollout's carries its run tag)."""
    sample: int = 0
    """0..k-1 among a task's samples."""
    termination: str | None = None
    """One of TERMINATIONS; None gives "error" for errors and skips, else "submit"."""
    n_format_errors: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)
    """A model's whole conversation ([] for scripted agents: their row lists the commands)."""
    policy_id: str | None = None
    """Checkpoint name written into the row (None: the agent's name)."""
    iteration: int = -1
    """Loop iteration, -1 outside the loop."""
    timing: EpisodeTiming | None = None
    """Seconds per phase; None for a task that never ran (unloadable) and in records written before it."""

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def error(self) -> str | None:
        """The reason of an error or a skip; None for graded episodes."""
        return self.reason if self.outcome in ("error", "skipped") else None

    @property
    def n_turns(self) -> int:
        return len(self.steps)

    def to_json(self) -> dict[str, Any]:
        """The episodes.jsonl line: the verdict and the commands that ran (no conversation)."""
        out = {k: getattr(self, k) for k in ("task_id", "name", "suite", "skill", "level", "agent", "outcome",
                                             "reward", "reason", "duration_s")}
        out["verifier_output"] = self.verifier_output or ""
        out["steps"] = [{"command": s.command, "exit_code": -1 if s.exit_code is None else s.exit_code,
                         "output": s.output or "", "timed_out": s.timed_out, "duration_s": s.duration_s}
                        for s in self.steps if s.command is not None]
        out.update(prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
                   unloadable=self.unloadable, node=self.node)
        if self.benchmark is not None:
            out.update(benchmark=self.benchmark, scores=self.scores)
        out["timing"] = self.timing.to_json() if self.timing is not None else None
        return out

    def to_row(self) -> dict[str, Any]:
        """A row of EPISODE_SCHEMA."""
        if self.messages:
            messages = json.dumps(self.messages, ensure_ascii=False)
        else:  # a scripted agent: its commands as bash tool calls
            messages = orjson.dumps([{"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "bash", "arguments": orjson.dumps(
                    {"command": s.command}).decode()}}]} for s in self.steps]).decode()
        return {
            "episode_id": self.episode_id or f"{self.task_id}-{self.sample}-{self.agent}", "task_id": self.task_id,
            "suite": self.suite, "skill": self.skill, "level": self.level, "sample": self.sample,
            "policy_id": self.policy_id or self.agent, "iteration": self.iteration, "reward": self.reward,
            "passed": self.passed, "outcome": self.outcome,
            "termination": self.termination or ("error" if self.outcome in ("error", "skipped") else "submit"),
            "error": self.error, "n_turns": self.n_turns, "n_format_errors": self.n_format_errors,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "duration_s": self.duration_s, "messages": messages,
            "verifier_output": clip(self.verifier_output),
            "timing": self.timing.to_json() if self.timing is not None else None,
        }

    def step_rows(self) -> list[dict[str, Any]]:
        """Its rows of STEP_SCHEMA."""
        eid = self.to_row()["episode_id"]
        return [s.to_row(eid) for s in self.steps]


# --------------------------------------------------------- checks of the contract (`clawloop check`)
def check_trajectories(path: Path) -> None:
    """Every Parquet part (of a directory, or the one part given) has the contract's columns
    with the contract's types and values."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    episode_schema, step_schema = __getattr__("EPISODE_SCHEMA"), __getattr__("STEP_SCHEMA")  # built on first use
    parts = [path] if path.is_file() else sorted(path.rglob("*.parquet"))
    if not parts:
        raise ClawloopError(f"{path}: no Parquet parts")
    for part in parts:
        expected = episode_schema if part.name.startswith("episodes") else step_schema
        optional = OPTIONAL_EPISODE_COLUMNS if expected is episode_schema else OPTIONAL_STEP_COLUMNS
        try:
            schema = pq.read_schema(part)
        except (pa.ArrowException, OSError) as e:
            raise ClawloopError(f"{part}: not a readable Parquet file ({e})") from None
        for col in expected:
            if col.name not in schema.names and col.name in optional:
                continue
            if col.name not in schema.names:
                raise ClawloopError(f"{part}: {col.name}: missing column")
            got = schema.field(col.name).type
            if got != col.type and not (got == "null"):
                raise ClawloopError(f"{part}: {col.name}: type {got}, expected {col.type}")
        if expected is episode_schema:
            table = pq.read_table(part, columns=["outcome", "termination"])
            for col, allowed in (("outcome", OUTCOMES), ("termination", TERMINATIONS)):
                bad = set(table.column(col).to_pylist()) - set(allowed) - {None}
                if bad:
                    raise ClawloopError(f"{part}: {col}: unknown value {sorted(bad)[0]!r}")


def check_records(path: Path) -> None:
    """`clawloop eval --out` records: JSON objects with a known outcome."""
    for lineno, obj in iter_jsonl(path):
        if not isinstance(obj, dict):
            raise ClawloopError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        if obj.get("outcome") not in OUTCOMES:
            raise ClawloopError(f"{path}:{lineno}: outcome: {obj.get('outcome')!r} not one of {', '.join(OUTCOMES)}")
        timing = obj.get("timing")  # optional: records written before it have none
        if timing is not None and not (isinstance(timing, dict) and all(
                isinstance(timing.get(p), int | float) and timing[p] >= 0 for p in TIMING_PHASES)):
            raise ClawloopError(f"{path}:{lineno}: timing: expected seconds (>= 0) for {', '.join(TIMING_PHASES)}")
