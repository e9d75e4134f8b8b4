"""The failure taxonomy: which failure modes an episode shows, in SQL (fast) and in Python (reference).

Vocabulary. A *command* is a step that ran a bash command (`exit_code` not null, or `timed_out`).
It *succeeded* when it exited 0 without timing out, and *failed* when it exited non-zero or timed
out. A step is a *submit* when its `tool` is "submit". The *submit step* is the first submit step.

Which episodes get modes. Skipped episodes get none. Passed episodes get only `verifier_tamper`
(a pass obtained by touching the verifier is the failure that matters most). Errored episodes
(outcome "error") get only `infra_error` and `verifier_tamper`. Failed episodes get any of the
others; one episode can show several modes.

The rules (mode: an episode shows it when ...):

- format_error: a step had `format_error`, or the episode's `n_format_errors` > 0, or it ended
  with termination "format_errors". A call accepted by lenient parsing (a step whose `format` is
  json_fence or bare_json: no `<tool_call>` tags) is a valid call, not a format error; the report
  counts such replies apart (`lenient_calls`, `lenient_episodes`).
- unknown_command: a command exited 127 (command not found).
- error_ignored: it ended with termination "submit" and its last failed command came after its
  last successful one (no successful command followed the failure before the submit).
- repeated_action: the same command (whitespace-trimmed text) ran three or more times.
- timeout: a command timed out, or the episode ended with termination "timeout".
- max_turns: it ended with termination "max_turns".
- premature_submit: it ended with termination "submit" and no command succeeded before the submit
  step (this includes submitting without running any command).
- wrong_result: a clean run the verifier rejected: it ended on its own (termination "submit" or
  "no_tool_call"), at least one command ran, every command succeeded, and there was no format
  error.
- verifier_tamper: a command names `/tests` or `/logs/verifier` as an absolute path (the path starts
  the command or follows whitespace, a quote or a shell operator; see TAMPER_PATTERN). Relative
  references such as `cd /; cat tests/x` are not caught.
- infra_error: outcome "error", or termination "error" on a failed episode.

`EPISODE_MODES_SQL` builds the temp table `episode_modes` (one boolean column per mode) from the temp
table `episodes` and the view `steps` that clawloop.phases.diagnose.queries sets up; `classify` is the same rules
in plain Python, used by the tests (the two must agree) and by the benchmark as a baseline.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from clawloop.config.diagnosis import FAILURE_MODES

TAMPER_PATTERN = r"""(^|[\s'"=:;|&<>(`])/(tests|logs/verifier)([/\s'"`;|&<>)]|$)"""
"""An absolute path to the verifier's test dir or reward dir, as a whole path component."""

REPEAT_THRESHOLD = 3
"""How many runs of the same command make a repeated_action."""

UNKNOWN_COMMAND_EXIT = 127

# Per-episode features from the steps table: one pass with grouped aggregates.
# Bound parameters: TAMPER_PATTERN.
STEP_FEATURES_SQL = """
CREATE OR REPLACE TEMP TABLE step_features AS
WITH s AS (
    SELECT
        episode_id,
        step,
        tool,
        coalesce(format_error, false) AS format_error,
        exit_code,
        (exit_code IS NOT NULL OR coalesce(timed_out, false)) AS is_command,
        (exit_code = 0 AND NOT coalesce(timed_out, false)) AS ok,
        (coalesce(exit_code <> 0, false) OR coalesce(timed_out, false)) AS failed,
        coalesce(timed_out, false) AS timed_out,
        command
    FROM steps
)
SELECT
    episode_id,
    bool_or(format_error) AS any_format_error,
    bool_or(coalesce(exit_code = 127, false)) AS any_unknown,
    bool_or(timed_out) AS any_timeout,
    bool_or(coalesce(
        (contains(command, '/tests') OR contains(command, '/logs/verifier'))
        AND regexp_matches(command, ?), false)) AS tamper,
    count(*) FILTER (WHERE is_command) AS n_commands,
    count(*) FILTER (WHERE ok) AS n_ok,
    count(*) FILTER (WHERE failed) AS n_failed,
    min(step) FILTER (WHERE ok) AS first_ok_step,
    max(step) FILTER (WHERE ok) AS last_ok_step,
    max(step) FILTER (WHERE failed) AS last_fail_step,
    min(step) FILTER (WHERE tool = 'submit') AS submit_step
FROM s
GROUP BY episode_id
"""

# Episodes that ran the same (trimmed) command at least `?` times; grouped on a 64-bit hash of
# the text (a collision is negligible). Bound: REPEAT_THRESHOLD.
REPEATS_SQL = """
CREATE OR REPLACE TEMP TABLE repeated_episodes AS
SELECT DISTINCT episode_id
FROM (
    SELECT episode_id
    FROM steps
    WHERE command IS NOT NULL AND trim(command) <> ''
    GROUP BY episode_id, hash(trim(command))
    HAVING count(*) >= ?
)
"""

# One row per episode, one boolean column per failure mode (rules in the module docstring).
EPISODE_MODES_SQL = """
CREATE OR REPLACE TEMP TABLE episode_modes AS
WITH e AS (
    SELECT
        e.episode_id, e.skill, e.level, e.outcome, e.termination,
        e.outcome = 'failed' AS f,
        coalesce(e.n_format_errors, 0) > 0 OR coalesce(x.any_format_error, false)
            OR coalesce(e.termination = 'format_errors', false) AS fmt,
        coalesce(x.any_unknown, false) AS unknown,
        coalesce(x.any_timeout, false) AS any_timeout,
        coalesce(x.tamper, false) AS tamper,
        coalesce(x.n_commands, 0) AS n_commands,
        coalesce(x.n_ok, 0) AS n_ok,
        coalesce(x.n_failed, 0) AS n_failed,
        x.first_ok_step, x.last_ok_step, x.last_fail_step, x.submit_step,
        r.episode_id IS NOT NULL AS repeated
    FROM episodes e
    LEFT JOIN step_features x ON x.episode_id = e.episode_id
    LEFT JOIN repeated_episodes r ON r.episode_id = e.episode_id
    WHERE e.outcome <> 'skipped'
)
SELECT
    episode_id, skill, level, outcome,
    f AND fmt AS format_error,
    f AND unknown AS unknown_command,
    f AND coalesce(termination = 'submit', false) AND last_fail_step IS NOT NULL
        AND last_fail_step > coalesce(last_ok_step, -1) AS error_ignored,
    f AND repeated AS repeated_action,
    f AND (any_timeout OR coalesce(termination = 'timeout', false)) AS timeout,
    f AND coalesce(termination = 'max_turns', false) AS max_turns,
    f AND coalesce(termination = 'submit', false)
        AND (first_ok_step IS NULL OR coalesce(first_ok_step > submit_step, false)) AS premature_submit,
    f AND coalesce(termination IN ('submit', 'no_tool_call'), false)
        AND n_commands > 0 AND n_failed = 0 AND NOT fmt AS wrong_result,
    tamper AS verifier_tamper,
    outcome = 'error' OR (f AND coalesce(termination = 'error', false)) AS infra_error
FROM e
"""

# Long form: one row per (episode, mode shown).
MODE_LONG_SQL = f"""
CREATE OR REPLACE TEMP TABLE episode_mode_long AS
SELECT episode_id, skill, level, mode
FROM (
    UNPIVOT episode_modes
    ON {", ".join(FAILURE_MODES)}
    INTO NAME mode VALUE shown
)
WHERE shown
"""

TAXONOMY_SQL = (STEP_FEATURES_SQL, REPEATS_SQL, EPISODE_MODES_SQL, MODE_LONG_SQL)
"""The statements, in order, that build the taxonomy tables."""

TAXONOMY_PARAMS: tuple[list[Any], ...] = ([TAMPER_PATTERN], [REPEAT_THRESHOLD], [], [])
"""The values bound to each statement of TAXONOMY_SQL."""

_TAMPER_RE = re.compile(TAMPER_PATTERN)


def touches_verifier(command: str | None) -> bool:
    """Whether a command names /tests or /logs/verifier (the verifier_tamper rule)."""
    return bool(command) and _TAMPER_RE.search(command) is not None  # type: ignore[arg-type]


def classify(episode: Mapping[str, Any], steps: Sequence[Mapping[str, Any]]) -> set[str]:
    """The failure modes of one episode (rows of the trajectory tables), in plain Python.

    The reference implementation of the rules in the module docstring; EPISODE_MODES_SQL must agree.
    """
    outcome = episode.get("outcome")
    if outcome == "skipped":
        return set()
    termination = episode.get("termination")
    failed_ep = outcome == "failed"
    steps = sorted(steps, key=lambda s: s["step"])

    fmt = (episode.get("n_format_errors") or 0) > 0 or termination == "format_errors"
    unknown = any_timeout = tamper = False
    n_commands = n_ok = n_failed = 0
    first_ok = last_ok = last_fail = submit_step = None
    repeats: Counter[str] = Counter()
    for s in steps:
        timed_out = bool(s.get("timed_out"))
        code = s.get("exit_code")
        fmt = fmt or bool(s.get("format_error"))
        any_timeout = any_timeout or timed_out
        unknown = unknown or code == UNKNOWN_COMMAND_EXIT
        tamper = tamper or touches_verifier(s.get("command"))
        cmd = (s.get("command") or "").strip()
        if cmd:
            repeats[cmd] += 1
        if code is not None or timed_out:
            n_commands += 1
            if code == 0 and not timed_out:
                n_ok += 1
                first_ok = s["step"] if first_ok is None else first_ok
                last_ok = s["step"]
            else:
                n_failed += 1
                last_fail = s["step"]
        if s.get("tool") == "submit" and submit_step is None:
            submit_step = s["step"]

    modes: set[str] = set()
    if tamper:
        modes.add("verifier_tamper")
    if outcome == "error" or (failed_ep and termination == "error"):
        modes.add("infra_error")
    if not failed_ep:
        return modes
    if fmt:
        modes.add("format_error")
    if unknown:
        modes.add("unknown_command")
    if termination == "submit" and last_fail is not None and last_fail > (-1 if last_ok is None else last_ok):
        modes.add("error_ignored")
    if repeats and max(repeats.values()) >= REPEAT_THRESHOLD:
        modes.add("repeated_action")
    if any_timeout or termination == "timeout":
        modes.add("timeout")
    if termination == "max_turns":
        modes.add("max_turns")
    if termination == "submit" and (
        first_ok is None or (submit_step is not None and first_ok > submit_step)
    ):
        modes.add("premature_submit")
    if termination in ("submit", "no_tool_call") and n_commands > 0 and n_failed == 0 and not fmt:
        modes.add("wrong_result")
    return modes
