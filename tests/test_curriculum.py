"""The curriculum: quotas and knobs from hand-made capability reports; bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from clawloop.artifacts.diagnosis import CapabilityReport, CellStats, FailureModeStats, load_diagnosis
from clawloop.cli import app  # importing the CLI registers every command
from clawloop.config.diagnosis import DiagnosisParams
from clawloop.config.knobs import Knobs
from clawloop.config.synthesis import CurriculumParams
from clawloop.core.stats import wilson_interval
from clawloop.errors import ClawloopError
from clawloop.phases.diagnose.capability import recommend
from clawloop.phases.synthesize.skills import families
from clawloop.phases.synthesize.steering import largest_remainder, plan

SKILLS = list(families())


def cell(skill: str, level: int, passes: int, episodes: int) -> CellStats:
    lo, hi = wilson_interval(passes, episodes)
    return CellStats(skill=skill, level=level, episodes=episodes, passes=passes,
                     pass_rate=passes / episodes, ci_low=lo, ci_high=hi)


def report(*cells: CellStats, modes: list[FailureModeStats] | None = None,
           params: DiagnosisParams | None = None) -> CapabilityReport:
    """A report whose recommendations come from its cells by the diagnosis's rule, as a real one's do."""
    recs = recommend(list(cells), modes or [], params or DiagnosisParams(), [], {})
    return CapabilityReport(iteration=1, cells=list(cells), failure_modes=modes or [], recommendations=recs)


def levels_of(p, skill: str) -> dict[int, int]:
    return {lv: n for (s, lv), n in p.quotas.items() if s == skill}


def test_first_iteration_spreads_evenly_over_levels_one_and_two() -> None:
    p = plan(None, 280, CurriculumParams())
    assert p.total == 280
    assert {lv for _, lv in p.quotas} == {1, 2}
    per_skill = [p.skill_total(s) for s in SKILLS]
    assert max(per_skill) - min(per_skill) <= 1
    for s in SKILLS:
        lv = levels_of(p, s)
        assert abs(lv.get(1, 0) - lv.get(2, 0)) <= 1
        assert p.decisions[s].action == "start"
    assert p.knobs == {}


def test_raise_hold_lower() -> None:
    r = report(cell("files", 1, 20, 20), cell("files", 2, 19, 20),   # reliable at L2 -> raise to 3
               cell("csv", 1, 18, 20), cell("csv", 2, 9, 20),        # uncertain at L2 -> hold
               cell("json", 1, 15, 20), cell("json", 2, 4, 20), cell("json", 3, 0, 20))  # L3 failing -> 2
    p = plan(r, 400, CurriculumParams())
    assert p.decisions["files"].action == "raise" and p.decisions["files"].target_level == 3
    assert set(levels_of(p, "files")) == {2, 3}  # target plus a review share one below
    lv = levels_of(p, "files")
    assert lv[3] > lv[2]
    assert p.decisions["csv"].action == "hold" and p.decisions["csv"].target_level == 2
    assert p.decisions["json"].action == "lower" and p.decisions["json"].target_level == 2
    assert max(levels_of(p, "json")) == 2
    # a skill failing at level 1 stays at 1
    p1 = plan(report(cell("git", 1, 0, 30)), 100, CurriculumParams())
    assert p1.decisions["git"].target_level == 1 and set(levels_of(p1, "git")) == {1}
    # a skill already reliable at the top holds there
    p5 = plan(report(cell("git", 5, 30, 30)), 100, CurriculumParams())
    assert p5.decisions["git"].action == "hold" and max(levels_of(p5, "git")) == 5


def test_a_stretch_share_goes_one_level_above_the_target() -> None:
    """The level the rule holds a skill below gets reference demonstrations before the policy
    passes it; without the share no quota reaches it."""
    stretch = CurriculumParams(stretch_share=0.25)
    first = plan(None, 280, stretch)
    assert {lv for _, lv in first.quotas} == {1, 2, 3}
    for s in SKILLS:
        lv = levels_of(first, s)
        assert lv[3] == round(0.25 * first.skill_total(s)) and abs(lv[1] - lv[2]) <= 1
    r = report(cell("csv", 1, 18, 20), cell("csv", 2, 9, 20),  # holds at 2: review 1, stretch 3
               cell("git", 5, 30, 30))                          # held at the top: nothing above 5
    p = plan(r, 400, stretch)
    lv = levels_of(p, "csv")
    assert set(lv) == {1, 2, 3} and lv[2] > lv[1] and lv[2] > lv[3]
    assert abs(lv[1] - lv[3]) <= 1  # review and stretch: a quarter each
    assert set(levels_of(p, "git")) == {4, 5}
    assert {lv for _, lv in plan(r, 400, CurriculumParams()).quotas if _ == "csv"} == {1, 2}
    with pytest.raises(ValueError, match="stretch_share"):
        CurriculumParams(review_share=0.5, stretch_share=0.6)


def test_thin_cells_carry_no_decision() -> None:
    p = plan(report(cell("files", 3, 3, 3), params=DiagnosisParams(min_episodes=4)), 100, CurriculumParams())
    assert p.decisions["files"].action == "start"
    assert p.decisions["files"].target_level == 1 and "fewer than 4" in p.decisions["files"].reason


def test_budget_follows_weakness_with_a_floor() -> None:
    cells = [cell(s, 1, 20, 20) for s in SKILLS]  # everyone perfect ...
    cells[SKILLS.index("csv")] = cell("csv", 1, 2, 20)  # ... except csv
    params = CurriculumParams(floor_share=0.03)
    p = plan(report(*cells), 1000, params)
    assert p.total == 1000
    assert p.skill_total("csv") > 500
    floor = int(0.03 * 1000)
    assert all(p.skill_total(s) >= floor for s in SKILLS)
    # a tiny budget still covers every skill when it can
    small = plan(report(*cells), len(SKILLS), params)
    assert all(small.skill_total(s) == 1 for s in SKILLS)
    assert plan(report(*cells), 0, params).total == 0


def test_failure_modes_turn_on_knobs() -> None:
    modes = [
        FailureModeStats(mode="error_ignored", count=8, share=0.4, by_skill={"files": 6, "csv": 1}),
        FailureModeStats(mode="wrong_result", count=5, share=0.25, by_skill={"csv": 5}),
        FailureModeStats(mode="unknown_command", count=4, share=0.2, by_skill={"files": 4}),
        FailureModeStats(mode="premature_submit", count=3, share=0.15, by_skill={"json": 3}),
        FailureModeStats(mode="timeout", count=9, share=0.5, by_skill={"files": 9}),  # no knob mapped
    ]
    r = report(cell("files", 1, 5, 20), cell("csv", 1, 10, 20), cell("json", 1, 17, 20), modes=modes)
    p = plan(r, 200, CurriculumParams())
    assert p.knobs["files"] == Knobs(loud_broken_start=True, names_with_spaces=True)
    assert p.knobs["csv"] == Knobs(distractors=2)  # one error_ignored episode is below the minimum
    assert p.knobs["json"] == Knobs(more_steps=True)  # 3 of its 3 failed episodes
    assert "git" not in p.knobs
    # the same count is too small a share of a weaker skill's many failures
    r2 = report(cell("json", 1, 0, 40), modes=modes)
    assert "json" not in plan(r2, 50, CurriculumParams()).knobs
    # without per-skill counts the global share decides for every skill
    glob = report(cell("files", 1, 5, 20), modes=[FailureModeStats(mode="wrong_result", count=10, share=0.5)])
    pg = plan(glob, 100, CurriculumParams())
    assert all(pg.knobs[s] == Knobs(distractors=2) for s in SKILLS)
    # custom mapping
    custom = CurriculumParams(failure_knobs={"timeout": {"distractors": 4}})
    assert plan(r, 100, custom).knobs["files"] == Knobs(distractors=4)


def test_uniform_ablation_ignores_the_report() -> None:
    r = report(cell("files", 1, 20, 20), cell("csv", 4, 0, 20),
               modes=[FailureModeStats(mode="wrong_result", count=10, share=0.5, by_skill={"csv": 10})])
    p = plan(r, 700, CurriculumParams(conditioning=False))
    assert p.total == 700 and p.knobs == {}
    assert set(p.quotas) == {(s, lv) for s in SKILLS for lv in range(1, 6)}
    assert set(p.quotas.values()) == {10}
    assert p == plan(None, 700, CurriculumParams(conditioning=False))


def test_plan_reads_as_quota_mapping() -> None:
    p = plan(None, 30, CurriculumParams(), skills=["files", "json"])
    assert dict(p) == p.quotas and len(p) == 4 and p[("json", 2)] == 7
    assert {s for s, _ in p} == {"files", "json"}
    json.dumps(p.to_json())


def test_largest_remainder() -> None:
    assert largest_remainder(10, {"a": 1, "b": 1, "c": 1}) == {"a": 4, "b": 3, "c": 3}
    assert largest_remainder(5, {"a": 0, "b": 0}) == {"a": 3, "b": 2}
    assert sum(largest_remainder(997, {i: i + 1 for i in range(13)}).values()) == 997


# ------------------------------------------------------------------------------ bad input
def test_bad_inputs_raise_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ClawloopError, match="budget"):
        plan(None, -1, CurriculumParams())
    with pytest.raises(ClawloopError, match="unknown skill 'nope'"):
        plan(None, 10, CurriculumParams(), skills=["files", "nope"])
    bad = tmp_path / "diagnosis.json"
    bad.write_text(json.dumps({"cells": [{"skill": "files", "level": 1}]}))
    with pytest.raises(ClawloopError, match=r"diagnosis.json: schema_version: None is not the supported"):
        load_diagnosis(bad)
    bad.write_text(json.dumps({"schema_version": 1, "cells": [{"skill": "files", "level": 1}]}))
    with pytest.raises(ClawloopError, match=r"diagnosis.json: cells\.0\.episodes"):
        load_diagnosis(bad)
    bad.write_text("{not json")
    with pytest.raises(ClawloopError, match="not valid JSON"):
        load_diagnosis(bad)
    with pytest.raises(ClawloopError, match="file not found"):
        load_diagnosis(tmp_path / "missing.json")
    with pytest.raises(ValidationError):
        CurriculumParams(failure_knobs={"no_such_mode": {"distractors": 1}})
    with pytest.raises(ValidationError):
        CurriculumParams(failure_knobs={"timeout": {"bogus_knob": True}})
    with pytest.raises(ValidationError):
        CurriculumParams(start_levels=[0])


def test_cli_writes_pool_and_manifest(tmp_path: Path) -> None:
    r = report(cell("files", 1, 20, 20), cell("files", 2, 20, 20))
    rp = tmp_path / "diagnosis.json"
    rp.write_text(r.model_dump_json())
    out = tmp_path / "pool.jsonl"
    res = CliRunner().invoke(app, ["tasks", "synth", "--n", "30", "--seed", "4", "--diagnosis", str(rp),
                                   "--skills", "files,csv", "--iteration", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert len(lines) == 30
    rows = [json.loads(x) for x in lines]
    assert {r["skill"] for r in rows} == {"files", "csv"}
    assert all(r["provenance"]["routine"] == "procedural" and r["provenance"]["iteration"] == 2 for r in rows)
    man = json.loads((tmp_path / "pool.jsonl.manifest.json").read_text())
    assert man["plan"]["decisions"]["files"]["action"] == "raise"
    assert man["diversity"]["tasks"] == 30 and man["generators"]["files"].startswith("files@")


@pytest.mark.parametrize("args, message", [
    (["--n", "-2"], "--n"),
    (["--n", "5", "--skills", "files,bogus"], "unknown skill"),
    (["--n", "5", "--routine", "magic"], "unknown routine"),
    (["--n", "5", "--diagnosis", "BAD"], "cells.0"),
])
def test_cli_bad_input_writes_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 1, "cells": [{"skill": "files"}]}))
    out = tmp_path / "pool.jsonl"
    args = [str(bad) if a == "BAD" else a for a in args]
    res = CliRunner().invoke(app, ["tasks", "synth", *args, "--out", str(out)])
    assert res.exit_code != 0
    assert isinstance(res.exception, ClawloopError) and message in str(res.exception)
    assert "\n" not in str(res.exception)
    assert not out.exists() and not (tmp_path / "pool.jsonl.manifest.json").exists()


def test_grounded_routines_read_a_bad_report_as_a_one_line_error(tmp_path: Path) -> None:
    """Bug: the grounded routines read diagnosis.json with their own loader, so a bad field was a
    pydantic traceback and another schema_version went unnoticed. They get diagnosis's load_diagnosis's."""
    bad = tmp_path / "diagnosis.json"
    for body, needle in (({"schema_version": 1, "cells": [{"skill": "files"}]}, r"diagnosis.json: cells\.0\.episodes"),
                         ({"schema_version": 99}, "schema_version: 99 is not the supported version")):
        bad.write_text(json.dumps(body))
        res = CliRunner().invoke(app, ["tasks", "synth", "--routine", "proposer", "--model", "unused", "--n", "0",
                                       "--diagnosis", str(bad), "--out", str(tmp_path / "p.jsonl")])
        assert isinstance(res.exception, ClawloopError), res.output
        assert re.search(needle, str(res.exception)), res.exception


def test_the_plan_follows_the_report_it_never_decides_again() -> None:
    """One rule: what the report recommends is what the plan does, even against the cells (a report
    made with stricter thresholds than the defaults holds where the defaults would raise)."""
    strict = DiagnosisParams(raise_ci_low=0.95)
    r = report(cell("files", 2, 20, 20), params=strict)
    assert r.recommendations[0].action == "hold"
    p = plan(r, 100, CurriculumParams())
    assert p.decisions["files"].action == "hold" and p.decisions["files"].target_level == 2
    assert p.decisions["files"].reason == r.recommendations[0].reason
    assert plan(report(cell("files", 2, 20, 20)), 100, CurriculumParams()).decisions["files"].target_level == 3


def test_hold_targets_the_frontier_not_an_unpassed_top_level() -> None:
    """Iteration 1 of the Qwen default (probe, k = 4): level 2 at 0/8 is not yet 'failing' (Wilson
    high end 0.32), and holding there put most of the next pool where the base passed 1 of 96. The
    hold goes to the highest level passed at least once, or the lowest assessed with no pass. (At
    the fresh-evidence default lower_ci_high 0.35, 0/8 lowers: tests/test_fresh.py, test_no_fresh_pass_in_eight_lowers_one_in_eight_holds.)"""
    probe_era = DiagnosisParams(raise_ci_low=0.7, lower_ci_high=0.2)
    p = plan(report(cell("files", 1, 5, 16), cell("files", 2, 0, 8),
                    cell("json", 1, 0, 8), cell("json", 2, 0, 12),
                    cell("pipes_redirection", 1, 0, 4), cell("pipes_redirection", 2, 1, 8), params=probe_era),
             60, CurriculumParams())
    got = {s: (p.decisions[s].action, p.decisions[s].target_level) for s in ("files", "json", "pipes_redirection")}
    assert got == {"files": ("hold", 1), "json": ("hold", 1), "pipes_redirection": ("hold", 2)}
    assert "none of level 2's 8 passed yet" in p.decisions["files"].reason
    assert set(levels_of(p, "files")) == {1}
