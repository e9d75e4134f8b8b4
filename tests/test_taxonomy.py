"""Failure taxonomy: one hand-made episode per mode, SQL and Python rules agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clawloop.core.taxonomy import classify, touches_verifier
from clawloop.phases.diagnose.queries import build_taxonomy, episode_modes, find_trajectories, trajectory_db
from clawloop.phases.diagnose.synthetic import (
    episode_row,
    random_tables,
    step_row,
    submit_row,
    write_trajectories,
)


def _case(eid: str, ep: dict[str, Any], steps: list[tuple]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """steps: (command, exit_code, extra fields) or "submit"."""
    rows = []
    for i, s in enumerate(steps):
        if s == "submit":
            rows.append(submit_row(eid, i))
        else:
            cmd, code, *extra = s
            rows.append(step_row(eid, i, cmd, code, **(extra[0] if extra else {})))
    return episode_row(eid, n_turns=len(steps), **ep), rows


FMT = {"format_error": True}

CASES: dict[str, tuple[dict[str, Any], list, set[str]]] = {
    "fmt": ({"n_format_errors": 1}, [(None, None, FMT), ("ls", 0), "submit"], {"format_error"}),
    "fmtend": ({"termination": "format_errors", "n_format_errors": 3},
               [(None, None, FMT)] * 3, {"format_error"}),
    "unknown": ({}, [("frobnicate x", 127), ("ls", 0), "submit"], {"unknown_command"}),
    "ignored": ({}, [("ls", 0), ("cp a b", 1), "submit"], {"error_ignored"}),
    "repeat": ({"termination": "no_tool_call"},
               [("cat f", 0), (" cat f", 0), ("cat f ", 0), ("false", 1), ("ls", 0)], {"repeated_action"}),
    "timeout": ({"termination": "timeout"}, [("ls", 0), ("sleep 999", None, {"timed_out": True})], {"timeout"}),
    "cmdtimeout": ({"termination": "no_tool_call"},
                   [("sleep 9", 124, {"timed_out": True}), ("ls", 0)], {"timeout"}),
    "maxturns": ({"termination": "max_turns"}, [("ls", 0), ("pwd", 0)], {"max_turns"}),
    "premature": ({}, ["submit"], {"premature_submit"}),
    "wrong": ({}, [("ls", 0), ("echo hi > out.txt", 0), "submit"], {"wrong_result"}),
    "tamper": ({"outcome": "passed"}, [("cat /tests/test.sh", 0), ("echo 1 > /logs/verifier/reward.txt", 0),
                                       "submit"], {"verifier_tamper"}),
    "infra": ({"outcome": "error", "termination": "error", "error": "sandbox died"}, [], {"infra_error"}),
    "clean": ({"outcome": "passed"}, [("ls", 0), ("rm x", 1), "submit"], set()),
    "skipped": ({"outcome": "skipped", "termination": "error"}, [], set()),
    # Several modes at once: every command failed, then submit.
    "multi": ({}, [("nosuch", 127), "submit"], {"unknown_command", "error_ignored", "premature_submit"}),
    # A failure then a successful command, then submit: nothing ignored, nothing premature.
    "recovered": ({}, [("cd /nope", 1), ("cd /tmp", 0), "submit"], set()),
}


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    eps, steps = [], []
    for eid, (ep, st, _) in CASES.items():
        e, s = _case(eid, ep, st)
        eps.append(e)
        steps += s
    return write_trajectories(tmp_path_factory.mktemp("cases"), eps, steps)


def _sql_modes(directory: Path) -> dict[str, set[str]]:
    with trajectory_db(find_trajectories([directory])) as con:
        build_taxonomy(con)
        return {eid: set(m) for eid, m in episode_modes(con).items()}


@pytest.mark.parametrize("eid", list(CASES))
def test_sql_rules(cases_dir: Path, eid: str) -> None:
    assert _sql_modes(cases_dir).get(eid, set()) == CASES[eid][2]


@pytest.mark.parametrize("eid", list(CASES))
def test_python_rules(eid: str) -> None:
    ep, st, expected = CASES[eid]
    e, s = _case(eid, ep, st)
    assert classify(e, s) == expected


def test_every_mode_has_a_case() -> None:
    from clawloop.artifacts.diagnosis import FAILURE_MODES

    covered = set().union(*(m for _, _, m in CASES.values()))
    assert covered == set(FAILURE_MODES)


@pytest.mark.parametrize(("command", "hit"), [
    ("cat /tests/test.sh", True),
    ("ls /tests", True),
    ("cd /tests && ls", True),
    ("echo 1 > /logs/verifier/reward.txt", True),
    ("cat '/tests/x'", True),
    ("X=$(cat /tests/a)", True),
    ("ls /workspace/tests", False),
    ("cat tests/test.sh", False),
    ("ls /testsuite", False),
    ("ls /logs", False),
    (None, False),
])
def test_touches_verifier(command: str | None, hit: bool) -> None:
    assert touches_verifier(command) is hit


def test_sql_agrees_with_python_on_random_data(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    episodes, steps = random_tables(3000, steps_per_episode=6, seed=7)
    pq.write_table(episodes, tmp_path / "episodes-00000.parquet")
    pq.write_table(steps, tmp_path / "steps-00000.parquet")
    sql = _sql_modes(tmp_path)
    by_ep: dict[str, list[dict[str, Any]]] = {}
    for s in steps.to_pylist():
        by_ep.setdefault(s["episode_id"], []).append(s)
    py = {}
    for e in episodes.to_pylist():
        modes = classify(e, by_ep.get(e["episode_id"], []))
        if modes:
            py[e["episode_id"]] = modes
    assert sql == py
    assert len(py) > 1000
