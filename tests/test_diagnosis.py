"""Diagnosis: report numbers against hand-computed ones, outputs, trends, recommendations, bad input."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clawloop.artifacts.diagnosis import CapabilityReport, load_diagnosis
from clawloop.config.diagnosis import DiagnosisParams
from clawloop.core.stats import wilson_interval
from clawloop.errors import ClawloopError
from clawloop.phases.diagnose.capability import _cell, find_regressions, recommend
from clawloop.phases.diagnose.diagnose import diagnose
from clawloop.phases.diagnose.synthetic import episode_row, step_row, submit_row, write_trajectories


def _ep(eid: str, skill: str, level: int, outcome: str, turns: int, tokens: int, **kw: Any) -> dict[str, Any]:
    return episode_row(eid, skill=skill, level=level, outcome=outcome, n_turns=turns,
                       completion_tokens=tokens, prompt_tokens=10 * tokens, **kw)


def make_rollout(directory: Path) -> Path:
    """Nine hand-made episodes; the expected figures are worked out in the tests below."""
    eps = [
        _ep("a-0", "files", 1, "passed", 2, 10),
        _ep("b-0", "files", 1, "passed", 2, 20),
        _ep("c-0", "files", 1, "passed", 2, 30),
        _ep("d-0", "files", 1, "failed", 3, 40),                          # wrong_result
        _ep("e-0", "files", 2, "failed", 1, 50),                          # premature_submit
        _ep("f-0", "files", 2, "failed", 2, 60, termination="max_turns"),  # max_turns
        _ep("g-0", "text", 1, "passed", 2, 70),
        _ep("h-0", "text", 1, "error", 0, 0, termination="error"),        # infra_error
        _ep("i-0", "text", 1, "skipped", 0, 0, termination="error"),
    ]
    steps = [
        step_row("a-0", 0, "ls", 0), submit_row("a-0", 1),
        step_row("b-0", 0, "ls -la", 0), submit_row("b-0", 1),
        step_row("c-0", 0, "/bin/ls", 0), submit_row("c-0", 1),
        step_row("d-0", 0, "ls", 0), step_row("d-0", 1, "cat a", 0), submit_row("d-0", 2),
        submit_row("e-0", 0),
        step_row("f-0", 0, "ls", 0), step_row("f-0", 1, "grep x f", 1),
        step_row("g-0", 0, "FOO=1 sort a", 0), submit_row("g-0", 1),
    ]
    return write_trajectories(directory, eps, steps)


@pytest.fixture
def rollout(tmp_path: Path) -> Path:
    return make_rollout(tmp_path / "rollout")


def test_report_numbers(rollout: Path, tmp_path: Path) -> None:
    r = diagnose([rollout], out_dir=tmp_path / "out")
    assert r.episodes == 9
    assert r.outcomes == {"passed": 4, "failed": 3, "error": 1, "skipped": 1}
    assert r.pass_rate == pytest.approx(4 / 7)
    assert r.iteration == 1 and r.policy_id == "p0"
    assert r.mean_turns == pytest.approx(14 / 8)
    assert r.mean_tokens == pytest.approx(280 / 8)
    assert r.mean_prompt_tokens == pytest.approx(2800 / 8)
    cells = {(c.skill, c.level): (c.episodes, c.passes) for c in r.cells}
    assert cells == {("files", 1): (4, 3), ("files", 2): (2, 0), ("text", 1): (1, 1)}
    c = r.cell("files", 1)
    assert c is not None and (c.ci_low, c.ci_high) == pytest.approx(wilson_interval(3, 4))
    assert [(s.suite, s.episodes, s.passes) for s in r.suites] == [("pool", 7, 4)]
    assert [(x.command, x.count) for x in r.commands] == [("ls", 5), ("cat", 1), ("grep", 1), ("sort", 1)]
    assert r.commands[0].share == pytest.approx(5 / 8)
    assert r.command_vocabulary == 4
    counts = {m.mode: m.count for m in r.failure_modes}
    assert counts == {"format_error": 0, "unknown_command": 0, "error_ignored": 0, "repeated_action": 0,
                      "timeout": 0, "max_turns": 1, "premature_submit": 1, "wrong_result": 1,
                      "verifier_tamper": 0, "infra_error": 1}
    # f-0 ended by max_turns after a failed command: not error_ignored (that needs a submit)
    modes = {m.mode: m for m in r.failure_modes}
    assert modes["premature_submit"].examples == ["e-0"]
    assert modes["wrong_result"].by_skill == {"files": 1}
    assert modes["infra_error"].by_skill == {"text": 1}
    assert modes["max_turns"].share == pytest.approx(1 / 4)  # 3 failed + 1 error episodes
    assert r.mode_count("wrong_result", "files") == 1
    assert r.regressions == [] and r.previous is None


def test_outputs_written(rollout: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = diagnose([rollout], out_dir=out)
    assert sorted(p.name for p in out.iterdir()) == ["diagnosis.json", "diagnosis.md", "pass_rate.png"]
    assert (out / "pass_rate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert load_diagnosis(out / "diagnosis.json") == r
    md = (out / "diagnosis.md").read_text()
    assert "| files | 1 | 4 | 3 | 75.0% |" in md
    assert "pass_rate.png" in md and "## Recommendations" in md


def test_parquet_files_as_arguments(rollout: Path) -> None:
    files = sorted(rollout.glob("*.parquet"))
    assert diagnose(files).episodes == 9


def test_rollout_dirs_are_merged(tmp_path: Path) -> None:
    write_trajectories(tmp_path / "a", [episode_row("x-0", outcome="passed")], [submit_row("x-0", 0)])
    write_trajectories(tmp_path / "b", [episode_row("y-0")], [submit_row("y-0", 0)])
    r = diagnose([tmp_path])  # searched recursively
    assert r.episodes == 2 and r.pass_rate == 0.5


def test_previous_trends_and_regressions(rollout: Path, tmp_path: Path) -> None:
    first = diagnose([rollout], out_dir=tmp_path / "it1")
    prev = first.model_copy(deep=True)
    prev.iteration = 0
    prev.pass_rate = 0.9
    c = prev.cell("files", 2)
    assert c is not None
    c.episodes, c.passes, c.pass_rate = 40, 40, 1.0
    c.ci_low, c.ci_high = wilson_interval(40, 40)
    prev.failure_modes[0].count = 7
    (tmp_path / "prev.json").write_text(prev.model_dump_json())
    r = diagnose([rollout], previous=tmp_path / "prev.json", out_dir=tmp_path / "it2", iteration=2)
    assert r.iteration == 2
    assert r.previous is not None and r.previous.pass_rate == 0.9 and r.previous.iteration == 0
    assert r.cell("files", 2).previous_pass_rate == 1.0  # type: ignore[union-attr]
    assert r.cell("files", 1).previous_pass_rate == pytest.approx(0.75)  # type: ignore[union-attr]
    assert r.failure_modes[0].previous_count == 7
    assert [(g.skill, g.level) for g in r.regressions] == [("files", 2)]
    assert "Regressions" in (tmp_path / "it2" / "diagnosis.md").read_text()


def test_find_regressions_rules() -> None:
    params = DiagnosisParams()

    def prev(*cells: tuple[str, int, int, int]) -> CapabilityReport:
        return CapabilityReport(cells=[_cell(*c) for c in cells])

    p = prev(("a", 1, 20, 20), ("b", 1, 10, 6), ("c", 1, 2, 2), ("d", 1, 10, 2))
    cur = [_cell("a", 1, 20, 5), _cell("b", 1, 10, 3), _cell("c", 1, 2, 1), _cell("d", 1, 10, 9),
           _cell("e", 1, 10, 0)]
    got = {g.skill: g for g in find_regressions(cur, p, params)}
    assert set(got) == {"a", "b"}  # a: intervals apart; b: fell 0.3 > 0.2 with 10 episodes each
    assert "interval" in got["a"].reason and "margin" in got["b"].reason
    assert got["b"].previous == 0.6 and got["b"].current == 0.3


def test_recommendations() -> None:
    params = DiagnosisParams()
    cells = [
        _cell("up", 2, 10, 10), _cell("up", 3, 10, 10),   # top level 3 reliable → raise to 4
        _cell("down", 1, 20, 18), _cell("down", 2, 20, 0),  # level 2 fails → lower to 1
        _cell("floor", 1, 20, 0),                          # cannot go below 1
        _cell("mid", 2, 10, 5),                            # learnable → hold
        _cell("top", 5, 12, 12),                           # reliable at max_level → hold
        _cell("few", 1, 2, 2),                             # too few to be sure (< min_episodes) → expand
    ]
    recs = {r.skill: r for r in recommend(cells, [], params, ["up", "down", "floor", "mid", "top", "few", "err"],
                                           {"new": 2})}
    got = {s: (r.action, r.level) for s, r in recs.items()}
    assert got == {"up": ("raise", 4), "down": ("lower", 1), "floor": ("lower", 1), "mid": ("hold", 2),
                   "top": ("hold", 5), "few": ("expand", 1), "err": ("expand", 1), "new": ("expand", 2)}
    assert recs["up"].assessed_level == 3 and recs["up"].pass_rate == 1.0 and recs["few"].pass_rate is None
    assert "CI low" in recs["up"].reason


def test_recommendation_rests_on_the_frontier_not_the_top_level() -> None:
    """One episode per level and skill (shell-core's shape): too few anywhere to decide (the skill
    is expanded at its start level, not held at level 5); a thin top cell does not decide either."""
    params = DiagnosisParams()
    sparse = [_cell("git", lvl, 1, 0) for lvl in range(1, 6)]
    mixed = [_cell("csv", 1, 12, 12), _cell("csv", 2, 10, 5), _cell("csv", 5, 1, 0)]
    failing_low = [_cell("json", 1, 20, 0), _cell("json", 3, 1, 1)]
    recs = {r.skill: r for r in recommend(sparse + mixed + failing_low, [], params, [], {})}
    got = {s: (r.action, r.level) for s, r in recs.items()}
    assert got == {"git": ("expand", 1), "csv": ("hold", 2), "json": ("lower", 1)}
    assert "fewer than 4" in recs["git"].reason


def test_pool_diversity_and_expand(rollout: Path, tmp_path: Path) -> None:
    from clawloop.core.tasks.pool import write_pool
    from clawloop.core.tasks.task import Task, Verifier

    v = Verifier(files={"test.sh": {"content": "exit 0"}})
    tasks = [Task(instruction="do a", skill="files", level=1, verifier=v),
             Task(instruction="do b", skill="files", level=3, verifier=v),
             Task(instruction="do a", skill="json", level=2, verifier=v, env={"X": "1"})]
    write_pool(tmp_path / "pool.jsonl", tasks)
    r = diagnose([rollout], pool=tmp_path / "pool.jsonl", params=DiagnosisParams(known_skills=["git"]))
    d = r.diversity
    assert (d.tasks, d.unique_instructions, d.skills) == (3, 2, 2)
    p = [2 / 3, 1 / 3]
    assert d.skill_entropy == pytest.approx(-sum(x * math.log2(x) for x in p), abs=1e-6)
    assert d.mean_level == pytest.approx(2.0)
    recs = {x.skill: (x.action, x.level) for x in r.recommendations}
    assert recs["json"] == ("expand", 2) and recs["git"] == ("expand", 1)
    # files: level 1 at 3/4 is not reliable yet and its 0/2 level 2 too thin to count: hold at 1;
    # text has fewer than min_episodes graded episodes at every level: no evidence, expand
    assert recs["files"] == ("hold", 1) and recs["text"] == ("expand", 1)


def test_narrative_by_the_loop_model(rollout: Path) -> None:
    from scripted_policy import ScriptedPolicy

    policy = ScriptedPolicy(["  I pass file tasks but submit too early.  "])
    r = diagnose([rollout], params=DiagnosisParams(narrative=True), policy=policy)
    assert r.narrative == "I pass file tasks but submit too early."
    assert policy.calls == [1]
    assert diagnose([rollout], policy=policy).narrative is None  # off by default


# --- bad input: a clear error, nothing written ---------------------------------------------------

def _expect_error(tmp_path: Path, match: str, **kw: Any) -> None:
    out = tmp_path / "out"
    with pytest.raises(ClawloopError, match=match):
        diagnose(out_dir=out, **kw)
    assert not out.exists()


def test_missing_column(rollout: Path, tmp_path: Path) -> None:
    part = rollout / "episodes-00000.parquet"
    pq.write_table(pq.read_table(part).drop(["outcome"]), part)
    _expect_error(tmp_path, r"episodes-00000\.parquet: outcome: missing column", trajectories=[rollout])


def test_missing_step_column(rollout: Path, tmp_path: Path) -> None:
    part = rollout / "steps-00000.parquet"
    pq.write_table(pq.read_table(part).drop(["exit_code"]), part)
    _expect_error(tmp_path, "exit_code: missing column", trajectories=[rollout])


def test_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _expect_error(tmp_path, "no episodes", trajectories=[tmp_path / "empty"])


def test_no_rows(tmp_path: Path) -> None:
    write_trajectories(tmp_path / "r", [], [])
    _expect_error(tmp_path, "contain no episodes", trajectories=[tmp_path / "r"])


def test_missing_path(tmp_path: Path) -> None:
    _expect_error(tmp_path, "no such file", trajectories=[tmp_path / "nope"])


def test_not_parquet(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "episodes-0.parquet").write_text("hello")
    (tmp_path / "r" / "steps-0.parquet").write_text("hello")
    _expect_error(tmp_path, "not a readable Parquet file", trajectories=[tmp_path / "r"])


def test_bad_outcome(tmp_path: Path) -> None:
    write_trajectories(tmp_path / "r", [episode_row("x-0", outcome="weird")], [])
    _expect_error(tmp_path, r"episodes-00000\.parquet: outcome: 'weird'", trajectories=[tmp_path / "r"])


def test_wrong_column_type(tmp_path: Path) -> None:
    write_trajectories(tmp_path / "r", [episode_row("x-0")], [submit_row("x-0", 0)])
    part = tmp_path / "r" / "steps-00000.parquet"
    t = pq.read_table(part)
    t = t.set_column(t.schema.get_field_index("exit_code"), "exit_code", pa.array(["zero"]))
    pq.write_table(t, part)
    _expect_error(tmp_path, r"steps-00000\.parquet: exit_code: type string, expected int32", trajectories=[tmp_path / "r"])


@pytest.mark.parametrize(("content", "match"), [
    ({"schema_version": 99}, "schema_version: 99"),
    ({"iteration": 1}, "schema_version: None"),
    ({"schema_version": 1, "cells": "x"}, "cells"),
    ([1, 2], "expected a JSON object"),
])
def test_bad_previous(rollout: Path, tmp_path: Path, content: Any, match: str) -> None:
    (tmp_path / "prev.json").write_text(json.dumps(content))
    _expect_error(tmp_path, match, trajectories=[rollout], previous=tmp_path / "prev.json")


def test_cli(rollout: Path, tmp_path: Path) -> None:
    prog = "from clawloop.cli import main; main()"
    ok = subprocess.run([sys.executable, "-c", prog, "diagnose", str(rollout), "--out", str(tmp_path / "o"),
                         "--iteration", "3"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "pass rate 0.571" in ok.stdout
    assert json.loads((tmp_path / "o" / "diagnosis.json").read_text())["iteration"] == 3
    (tmp_path / "prev.json").write_text('{"schema_version": 2}')
    bad = subprocess.run([sys.executable, "-c", prog, "diagnose", str(rollout), "--out", str(tmp_path / "o2"),
                          "--previous-diagnosis", str(tmp_path / "prev.json")], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("error:") and "schema_version" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o2").exists()


def test_no_graded_episodes(tmp_path: Path) -> None:
    write_trajectories(tmp_path / "r", [episode_row("x-0", outcome="error", termination="error")], [])
    out = tmp_path / "out"
    out.mkdir()
    (out / "pass_rate.png").write_bytes(b"stale")
    r = diagnose([tmp_path / "r"], out_dir=out)
    assert (r.pass_rate, r.cells, r.mode_count("infra_error")) == (0.0, [], 1)
    assert [(x.skill, x.action) for x in r.recommendations] == [("files", "expand")]  # ran, none graded
    assert sorted(p.name for p in out.iterdir()) == ["diagnosis.json", "diagnosis.md"]


def test_lenient_calls_are_counted_apart_from_format_errors(tmp_path: Path) -> None:
    """A call accepted without <tool_call> tags is a valid call (no format_error mode) that the report
    counts, so a policy's reliance on lenient parsing shows."""
    eps = [_ep("a-0", "files", 1, "passed", 2, 10), _ep("b-0", "files", 1, "failed", 2, 10),
           _ep("c-0", "files", 1, "passed", 1, 10)]
    steps = [step_row("a-0", 0, "ls", 0, format="json_fence"), submit_row("a-0", 1) | {"format": "bare_json"},
             step_row("b-0", 0, "ls", 0, format="tool_call"), submit_row("b-0", 1) | {"format": "tool_call"},
             submit_row("c-0", 0)]  # a row without the field (a scripted agent's): null
    r = diagnose([write_trajectories(tmp_path / "r", eps, steps)], out_dir=tmp_path / "out")
    assert (r.lenient_calls, r.lenient_episodes) == (2, 1)
    assert r.mode_count("format_error") == 0
    md = (tmp_path / "out" / "diagnosis.md").read_text()
    assert "Lenient tool calls: 2 replies in 1 episodes" in md


def test_step_parts_written_before_the_format_column_still_read(rollout: Path, tmp_path: Path) -> None:
    from clawloop.artifacts.check import check_trajectories

    part = rollout / "steps-00000.parquet"
    pq.write_table(pq.read_table(part).drop(["format"]), part)
    r = diagnose([rollout], out_dir=tmp_path / "out")
    assert r.episodes == 9 and (r.lenient_calls, r.lenient_episodes) == (0, 0)
    check_trajectories(rollout)


def test_held_out_episodes_never_steer(tmp_path: Path) -> None:
    """The loop diagnoses over every rollout of the iteration, but only held-in episodes (the pool
    sample, the probe) make cells, per-skill failure counts and recommendations: a held-out suite
    where 'files' always fails must not lower it, nor turn on its knobs."""
    from clawloop.core.trajectory import HELD_IN_SUITES

    held_out = [episode_row(f"h{i}-0", suite="shell-core", skill="files", level=2) for i in range(12)]
    probe = [episode_row(f"p{i}-0", suite="probe", skill="files", level=2, outcome="passed") for i in range(10)]
    steps = [step_row(e["episode_id"], 0, "cat x") for e in held_out + probe]
    write_trajectories(tmp_path / "eval" / "shell-core", held_out, steps[:12])
    write_trajectories(tmp_path / "probe", probe, steps[12:])
    runs = [tmp_path / "eval", tmp_path / "probe"]
    everything = diagnose(runs)
    assert [(c.skill, c.level, c.passes, c.episodes) for c in everything.cells] == [("files", 2, 10, 22)]
    r = diagnose(runs, evidence_suites=HELD_IN_SUITES)
    assert [(c.skill, c.level, c.passes, c.episodes) for c in r.cells] == [("files", 2, 10, 10)]
    assert r.evidence_suites == list(HELD_IN_SUITES)
    assert {s.suite: s.passes for s in r.suites} == {"probe": 10, "shell-core": 0}  # still reported
    assert all(m.by_skill == {} for m in r.failure_modes)  # the 12 failures are held out
    rec = r.recommendations[0]
    assert (rec.skill, rec.action, rec.level, rec.assessed_level) == ("files", "raise", 3, 2)
