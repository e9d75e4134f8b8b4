"""DuckDB queries over the Parquet trajectories of one iteration.

An in-memory DuckDB connection reads the `episodes*.parquet` parts with read_parquet([...]) into a
temp table and the `steps*.parquet` parts through a view (only the columns diagnosis needs), then
the named SQL constants below compute the figures; values are bound with `?`. No database file is
created and the Parquet files are only read.
`compute_figures` runs everything and returns plain Python numbers (`Figures`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawloop.artifacts.diagnosis import FAILURE_MODES
from clawloop.core import trajectory
from clawloop.core.taxonomy import TAXONOMY_PARAMS, TAXONOMY_SQL
from clawloop.core.trajectory import LENIENT_FORMATS, OUTCOMES
from clawloop.errors import ClawloopError

EPISODE_COLUMNS = (
    "episode_id", "task_id", "suite", "skill", "level", "policy_id", "iteration", "passed",
    "outcome", "termination", "n_turns", "n_format_errors", "prompt_tokens", "completion_tokens",
)
"""Columns of EPISODE_SCHEMA that diagnosis reads (a part without one of them is rejected)."""

STEP_COLUMNS = ("episode_id", "step", "tool", "command", "format_error", "exit_code", "timed_out")
"""Columns of STEP_SCHEMA that diagnosis reads."""

OPTIONAL_STEP_VIEW_COLUMNS = {"format": "VARCHAR"}
"""Step columns diagnosis reads where the parts have them (NULL in the view where none does)."""

COMMAND_PATTERN = r"^\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*([^\s;|&()<>]+)"
"""The first word of a command, after leading `VAR=value` assignments (group 1)."""

# Bound: the list of episode part paths. A missing skill reads as "general", a missing level as 1
# (the Task defaults).
LOAD_EPISODES_SQL = f"""
CREATE OR REPLACE TEMP TABLE episodes AS
SELECT * REPLACE (coalesce(skill, 'general') AS skill, coalesce(level, 1) AS level)
FROM (
    SELECT {", ".join(EPISODE_COLUMNS)}, filename
    FROM read_parquet(?, union_by_name = true, filename = true)
)
"""

# `steps` is a view over the Parquet parts (built with the relation API: a view cannot take bound
# parameters), not a table: the few queries over it scan the files' dictionary-encoded columns
# faster than a materialized copy, and 1M steps never sit in memory twice.
STEPS_VIEW_COLUMNS = ", ".join(STEP_COLUMNS)

# The first episode with a missing id or an outcome outside the contract. Bound: list of OUTCOMES.
BAD_EPISODE_SQL = """
SELECT filename, episode_id, outcome
FROM episodes
WHERE episode_id IS NULL OR outcome IS NULL OR NOT list_contains(?, outcome)
LIMIT 1
"""

# Calls accepted by lenient parsing (written without <tool_call> tags) and the episodes with one.
# Bound: the list of LENIENT_FORMATS.
LENIENT_SQL = """
SELECT count(*), count(DISTINCT episode_id)
FROM steps
WHERE list_contains(?, format)
"""

# Headline figures. Pass rates count passed / (passed + failed): errors and skips are excluded.
TOTALS_SQL = """
SELECT
    count(*) AS episodes,
    count(*) FILTER (WHERE outcome = 'passed') AS passes,
    count(*) FILTER (WHERE outcome IN ('passed', 'failed')) AS graded,
    coalesce(avg(n_turns) FILTER (WHERE outcome <> 'skipped'), 0) AS mean_turns,
    coalesce(avg(completion_tokens) FILTER (WHERE outcome <> 'skipped'), 0) AS mean_tokens,
    coalesce(avg(prompt_tokens) FILTER (WHERE outcome <> 'skipped'), 0) AS mean_prompt_tokens,
    mode(iteration) AS iteration,
    mode(policy_id) AS policy_id
FROM episodes
"""

# The suites of the episodes (NULL read as '').
ALL_SUITES_SQL = "SELECT DISTINCT coalesce(suite, '') FROM episodes ORDER BY 1"

# Pass statistics per (skill, level) over graded episodes of the evidence suites, with the moments
# over tasks that `stats.effective_trials` needs (a task's samples are one cluster). Bound: the
# list of evidence suites.
CELLS_SQL = """
WITH per_task AS (
    SELECT skill, level, task_id, count(*) AS n, count(*) FILTER (WHERE outcome = 'passed') AS y
    FROM episodes
    WHERE outcome IN ('passed', 'failed') AND list_contains(?::VARCHAR[], coalesce(suite, ''))
    GROUP BY skill, level, task_id
)
SELECT skill, level, sum(n)::BIGINT AS episodes, sum(y)::BIGINT AS passes, count(*) AS tasks,
       sum(y * y)::DOUBLE AS yy, sum(y * n)::DOUBLE AS yn, sum(n * n)::DOUBLE AS nn
FROM per_task
GROUP BY skill, level
ORDER BY skill, level
"""

# Pass statistics per suite over graded episodes.
SUITES_SQL = """
SELECT suite, count(*) AS episodes, count(*) FILTER (WHERE outcome = 'passed') AS passes
FROM episodes
WHERE outcome IN ('passed', 'failed')
GROUP BY suite
ORDER BY suite
"""

OUTCOMES_SQL = "SELECT outcome, count(*) FROM episodes GROUP BY outcome ORDER BY outcome"

TERMINATIONS_SQL = """
SELECT coalesce(termination, '(none)'), count(*) FROM episodes GROUP BY 1 ORDER BY 1
"""

# Skills seen in the evidence suites' episodes (graded or not), so that recommendations know every
# skill touched. Bound: the list of evidence suites.
SKILLS_SQL = """
SELECT DISTINCT skill FROM episodes
WHERE skill IS NOT NULL AND list_contains(?::VARCHAR[], coalesce(suite, ''))
ORDER BY skill
"""

# Uses per command name: the first word (COMMAND_PATTERN) without its directory, extracted once per
# distinct command text. Bound: COMMAND_PATTERN.
COMMAND_NAMES_SQL = """
CREATE OR REPLACE TEMP TABLE command_names AS
WITH texts AS (
    SELECT command, count(*) AS n FROM steps WHERE command IS NOT NULL GROUP BY command
)
SELECT name, sum(n)::BIGINT AS n
FROM (SELECT regexp_replace(regexp_extract(command, ?, 1), '^.*/', '') AS name, n FROM texts)
WHERE name <> ''
GROUP BY name
"""

# Total and distinct command names.
COMMAND_TOTALS_SQL = "SELECT coalesce(sum(n), 0)::BIGINT, count(*) FROM command_names"

# The top-N commands. Bound: N.
TOP_COMMANDS_SQL = "SELECT name, n FROM command_names ORDER BY n DESC, name LIMIT ?"

# Episodes a failure-mode share is taken over: failed, errored, or flagged anyway (tampering).
FLAGGED_SQL = """
SELECT count(*) FROM episode_modes WHERE outcome IN ('failed', 'error') OR verifier_tamper
"""

MODE_COUNTS_SQL = "SELECT mode, count(*) FROM episode_mode_long GROUP BY mode"

# Per-skill counts steer synthesis (generator knobs): evidence suites only. Bound: their list.
MODE_BY_SKILL_SQL = """
SELECT m.mode, m.skill, count(*)
FROM episode_mode_long m JOIN episodes e USING (episode_id)
WHERE list_contains(?::VARCHAR[], coalesce(e.suite, ''))
GROUP BY m.mode, m.skill
ORDER BY m.mode, m.skill
"""

# The first N episode ids (in id order) of each mode. Bound: N.
MODE_EXAMPLES_SQL = """
SELECT mode, episode_id
FROM episode_mode_long
QUALIFY row_number() OVER (PARTITION BY mode ORDER BY episode_id) <= ?
ORDER BY mode, episode_id
"""

# Every (episode, mode) pair, for callers that want per-episode labels.
EPISODE_MODES_LIST_SQL = "SELECT episode_id, mode FROM episode_mode_long ORDER BY episode_id, mode"


@dataclass
class TrajectoryFiles:
    """The Parquet parts of a set of rollouts."""

    episodes: list[Path]
    steps: list[Path]


@dataclass
class ModeFigures:
    count: int
    examples: list[str]
    by_skill: dict[str, int]


@dataclass
class Figures:
    """Everything the report is built from, as plain numbers."""

    episodes: int
    passes: int
    graded: int
    mean_turns: float
    mean_tokens: float
    mean_prompt_tokens: float
    iteration: int | None
    policy_id: str
    cells: list[tuple[str, int, int, int, int, float, float, float]]
    """(skill, level, episodes, passes, tasks, and the sums over tasks of passes², passes ×
    samples, samples²) over graded episodes of the evidence suites."""
    suites: list[tuple[str, int, int]]
    outcomes: dict[str, int]
    terminations: dict[str, int]
    skills: list[str]
    commands_total: int
    command_vocabulary: int
    top_commands: list[tuple[str, int]]
    flagged: int
    """Denominator of failure-mode shares."""
    modes: dict[str, ModeFigures] = field(default_factory=dict)
    lenient_calls: int = 0
    """Replies whose one call was accepted without `<tool_call>` tags (a ```json fence, bare JSON)."""
    lenient_episodes: int = 0
    evidence_suites: list[str] = field(default_factory=list)
    """Suites the cells and per-skill counts are over (empty: all)."""


def _parts(directory: Path, prefix: str) -> list[Path]:
    return sorted(p for p in directory.rglob(f"{prefix}*.parquet") if p.is_file())


def find_trajectories(paths: Sequence[str | Path]) -> TrajectoryFiles:
    """Resolve rollout directories (searched recursively) and Parquet files into their parts.

    A file is an episodes part when its name starts with "episodes", a steps part when it starts
    with "steps", otherwise by its columns (a `step` column means steps). Checks every part has
    the columns diagnosis reads; raises ClawloopError naming the file and the missing field.
    """
    import pyarrow.parquet as pq

    if not paths:
        raise ClawloopError("no trajectories given")
    episodes: list[Path] = []
    steps: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found_e, found_s = _parts(path, "episodes"), _parts(path, "steps")
            if not found_e:
                raise ClawloopError(f"{path}: no episodes*.parquet in this directory")
            if not found_s:
                raise ClawloopError(f"{path}: no steps*.parquet in this directory")
            episodes += found_e
            steps += found_s
        elif path.is_file():
            if path.name.startswith("episodes"):
                episodes.append(path)
            elif path.name.startswith("steps"):
                steps.append(path)
            else:
                names = _schema_names(path, pq)
                (steps if "step" in names else episodes).append(path)
        else:
            raise ClawloopError(f"{path}: no such file or directory")
    if not episodes:
        raise ClawloopError(f"{', '.join(map(str, paths))}: no episodes*.parquet among the trajectories")
    if not steps:
        raise ClawloopError(f"{', '.join(map(str, paths))}: no steps*.parquet among the trajectories")
    for part in episodes:  # the schemas are built on first use (pyarrow)
        _check_columns(part, EPISODE_COLUMNS, trajectory.EPISODE_SCHEMA)
    for part in steps:
        _check_columns(part, STEP_COLUMNS, trajectory.STEP_SCHEMA)
    return TrajectoryFiles(episodes=_dedupe(episodes), steps=_dedupe(steps))


def _dedupe(paths: list[Path]) -> list[Path]:
    seen: dict[Path, None] = {}
    for p in paths:
        seen.setdefault(p.resolve(), None)
    return list(seen)


def _schema_names(path: Path, pq: Any) -> set[str]:
    try:
        return set(pq.read_schema(path).names)
    except Exception as e:  # pyarrow raises several types for non-Parquet input
        raise ClawloopError(f"{path}: not a readable Parquet file ({type(e).__name__}: {e})") from None


def _type_kind(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_null(t):
        return "null"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "str"
    return str(t)


def _check_columns(path: Path, required: Sequence[str], contract: Any) -> None:
    """Every required column present, of the contract's kind (any int width, any string, all-null ok)."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception as e:  # pyarrow raises several types for non-Parquet input
        raise ClawloopError(f"{path}: not a readable Parquet file ({type(e).__name__}: {e})") from None
    for col in required:
        if col not in schema.names:
            raise ClawloopError(f"{path}: {col}: missing column")
        want, got = contract.field(col).type, schema.field(col).type
        kind = _type_kind(got)
        if kind != "null" and kind != _type_kind(want) and not (kind == "int" and _type_kind(want) == "float"):
            raise ClawloopError(f"{path}: {col}: type {got}, expected {want}")


@contextmanager
def _read_errors(files: TrajectoryFiles) -> Iterator[None]:
    """Turn DuckDB's errors about unreadable or ill-typed data into a one-line ClawloopError."""
    import duckdb

    try:
        yield
    except (duckdb.IOException, duckdb.InvalidInputException, duckdb.ConversionException) as e:
        first = str(e).strip().splitlines()[0]
        raise ClawloopError(f"{files.episodes[0].parent}: cannot read trajectories ({first})") from None


@contextmanager
def trajectory_db(files: TrajectoryFiles, threads: int | None = None) -> Iterator[Any]:
    """An in-memory DuckDB connection with the temp table `episodes` and the view `steps`."""
    import duckdb

    config: dict[str, Any] = {}
    if threads:
        config["threads"] = threads
    con = duckdb.connect(":memory:", config=config)
    try:
        with _read_errors(files):
            con.execute(LOAD_EPISODES_SQL, [[str(p) for p in files.episodes]])
            steps = con.read_parquet([str(p) for p in files.steps], union_by_name=True)
            have = set(steps.columns)
            extra = [c if c in have else f"NULL::{t} AS {c}" for c, t in OPTIONAL_STEP_VIEW_COLUMNS.items()]
            steps.select(", ".join([STEPS_VIEW_COLUMNS, *extra])).create_view("steps", replace=True)
        bad = con.execute(BAD_EPISODE_SQL, [list(OUTCOMES)]).fetchone()
        if bad is not None:
            fname, eid, outcome = bad
            what = "episode_id: missing" if eid is None else f"outcome: {outcome!r} not one of {OUTCOMES}"
            raise ClawloopError(f"{fname}: {what}")
        yield con
    finally:
        con.close()


def build_taxonomy(con: Any) -> None:
    """Create the taxonomy temp tables (episode_modes, episode_mode_long) on a loaded connection."""
    for sql, params in zip(TAXONOMY_SQL, TAXONOMY_PARAMS, strict=True):
        con.execute(sql, params)


def episode_modes(con: Any) -> dict[str, list[str]]:
    """Failure modes of every episode that shows one (after build_taxonomy)."""
    out: dict[str, list[str]] = {}
    for eid, mode in con.execute(EPISODE_MODES_LIST_SQL).fetchall():
        out.setdefault(eid, []).append(mode)
    return out


def compute_figures(
    files: TrajectoryFiles, *, top_commands: int = 20, examples: int = 5, threads: int | None = None,
    evidence_suites: Sequence[str] | None = None,
) -> Figures:
    """Run every query over the trajectories and return the figures of the report. The cells and
    per-skill failure counts are over `evidence_suites` only (None: every suite)."""
    with trajectory_db(files, threads) as con, _read_errors(files):
        t = con.execute(TOTALS_SQL).fetchone()
        if not t or t[0] == 0:
            raise ClawloopError(f"{files.episodes[0]}: the trajectories contain no episodes")
        evidence = (list(evidence_suites) if evidence_suites is not None
                    else [r[0] for r in con.execute(ALL_SUITES_SQL).fetchall()])
        build_taxonomy(con)
        con.execute(COMMAND_NAMES_SQL, [COMMAND_PATTERN])
        total_cmds, vocab = con.execute(COMMAND_TOTALS_SQL).fetchone()
        modes = {m: ModeFigures(0, [], {}) for m in FAILURE_MODES}
        for mode, n in con.execute(MODE_COUNTS_SQL).fetchall():
            modes[mode].count = n
        for mode, skill, n in con.execute(MODE_BY_SKILL_SQL, [evidence]).fetchall():
            modes[mode].by_skill[skill] = n
        for mode, eid in con.execute(MODE_EXAMPLES_SQL, [examples]).fetchall():
            modes[mode].examples.append(eid)
        lenient_calls, lenient_episodes = con.execute(LENIENT_SQL, [list(LENIENT_FORMATS)]).fetchone()
        return Figures(
            episodes=t[0], passes=t[1], graded=t[2],
            mean_turns=float(t[3]), mean_tokens=float(t[4]), mean_prompt_tokens=float(t[5]),
            iteration=t[6], policy_id=t[7] or "",
            cells=[tuple(r) for r in con.execute(CELLS_SQL, [evidence]).fetchall()],  # type: ignore[misc]
            suites=[tuple(r) for r in con.execute(SUITES_SQL).fetchall()],  # type: ignore[misc]
            outcomes=dict(con.execute(OUTCOMES_SQL).fetchall()),
            terminations=dict(con.execute(TERMINATIONS_SQL).fetchall()),
            skills=[r[0] for r in con.execute(SKILLS_SQL, [evidence]).fetchall()],
            commands_total=total_cmds, command_vocabulary=vocab,
            top_commands=[tuple(r) for r in con.execute(TOP_COMMANDS_SQL, [top_commands]).fetchall()],  # type: ignore[misc]
            flagged=con.execute(FLAGGED_SQL).fetchone()[0],
            modes=modes, lenient_calls=lenient_calls, lenient_episodes=lenient_episodes,
            evidence_suites=list(evidence_suites or []),
        )
