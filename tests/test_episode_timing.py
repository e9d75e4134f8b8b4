"""Per-phase timings in the episode record (EpisodeTiming, the `timing` column and jsonl key): a
real oracle episode and a lockstep rollout fill them; records written before them still load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scripted_policy import ScriptedPolicy

from clawloop.core.agent.oracle import run_episode
from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.core.trajectory import (
    EPISODE_SCHEMA,
    TIMING_PHASES,
    EpisodeRecord,
    EpisodeTiming,
    check_records,
    check_trajectories,
)
from clawloop.errors import ClawloopError

TEST_SH = 'if [ "$(cat /workspace/out.txt 2>/dev/null)" = "hi" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'
SLACK = 1e-3
"""Rounding of the stored seconds (0.1 ms each)."""


def make_task(n: int = 0) -> Task:
    return Task(instruction=f"Write hi into out.txt ({n}).", skill="files", level=1,
                verifier=Verifier(files={"test.sh": FileSpec(content=TEST_SH)}),
                solution=Solution(steps=["sleep 0.05; echo hi > out.txt"]))


def call(cmd: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": cmd}}) + "\n</tool_call>"


def sensible(timing: dict[str, float], *, generated: bool) -> None:
    assert set(timing) == set(TIMING_PHASES) and all(v >= 0 for v in timing.values()), timing
    parts = sum(v for k, v in timing.items() if k != "total_s")
    assert timing["total_s"] + SLACK >= parts, timing  # phases of one episode never overlap
    assert timing["setup_s"] > 0 and timing["verification_s"] > 0 and timing["commands_s"] >= 0.05, timing
    assert (timing["generation_s"] > 0) is generated, timing


def test_a_real_oracle_episode_records_its_phases(backend: str, tmp_path: Path) -> None:
    rec = run_episode(make_task(), "oracle", backend)
    assert rec.outcome == "passed" and rec.timing is not None
    timing = rec.to_json()["timing"]
    sensible(timing, generated=False)
    assert abs(timing["total_s"] - rec.duration_s) < 0.5
    (tmp_path / "episodes.jsonl").write_text(json.dumps(rec.to_json()) + "\n")
    check_records(tmp_path / "episodes.jsonl")


def test_a_lockstep_rollout_records_its_phases(backend: str, tmp_path: Path) -> None:
    policy = ScriptedPolicy([call("sleep 0.05; echo hi > out.txt"), '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'])
    res = run_rollouts([make_task(0), make_task(1)], policy, RolloutConfig(k=1, batch_size=2, backend=backend),
                       out_dir=tmp_path, progress=False)
    assert [r.outcome for r in res] == ["passed", "passed"]
    rows = pa.concat_tables([pq.read_table(p) for p in sorted(tmp_path.glob("episodes-*.parquet"))]).to_pylist()
    for row in rows:
        sensible(row["timing"], generated=True)
    check_trajectories(tmp_path)


def old(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "timing"}


def test_records_written_before_timing_still_load_and_check(tmp_path: Path) -> None:
    rec = EpisodeRecord("t", "t", "s", "files", 1, "oracle", "passed", 1.0)
    assert rec.timing is None and rec.to_json()["timing"] is None and rec.to_row()["timing"] is None
    assert EpisodeTiming.from_json(None) is None
    assert EpisodeTiming.from_json({"setup_s": 1.5}) == EpisodeTiming(setup_s=1.5)
    (tmp_path / "episodes.jsonl").write_text(json.dumps(old(rec.to_json())) + "\n")
    check_records(tmp_path / "episodes.jsonl")
    schema = pa.schema([f for f in EPISODE_SCHEMA if f.name != "timing"])
    pq.write_table(pa.Table.from_pylist([old(rec.to_row())], schema=schema), tmp_path / "episodes-00000.parquet")
    check_trajectories(tmp_path / "episodes-00000.parquet")


def test_check_refuses_a_timing_that_is_not_seconds(tmp_path: Path) -> None:
    line = {**EpisodeRecord("t", "t", "s", "files", 1, "oracle", "passed", 1.0).to_json(), "timing": {"setup_s": -1}}
    (tmp_path / "episodes.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(ClawloopError, match="timing"):
        check_records(tmp_path / "episodes.jsonl")
