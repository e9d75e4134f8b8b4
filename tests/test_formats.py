"""Format detection and dispatch, SkillsBench skills on/off, summaries, and `clawloop eval --format`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clawloop.core.agent.oracle import run_episode
from clawloop.core.tasks.formats import apply_skills, detect_format, load_suite_any, score_fields
from clawloop.core.tasks.pool import write_pool
from clawloop.core.trajectory import EpisodeRecord
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "benchmarks" / "fixtures"
HARBOR = ROOT / "tests" / "fixtures" / "harbor"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def test_detect_each_layout(tmp_path: Path) -> None:
    assert detect_format(FIX / "clawgym") == "clawgym"
    assert detect_format(FIX / "clawgym" / "sales-total") == "clawgym"
    assert detect_format(FIX / "claw-eval-live") == "claw-eval-live"
    assert detect_format(FIX / "claw-eval-live" / "tasks" / "CTB_FX02_script_repair") == "claw-eval-live"
    assert detect_format(FIX / "skillsbench") == "harbor"
    assert detect_format(HARBOR) == "harbor"
    assert detect_format(ROOT / "benchmarks") == "harbor"  # fixtures sit too deep to mix in
    pool = tmp_path / "p.jsonl"
    pool.write_text("")
    assert detect_format(pool) == "jsonl"


def test_unknown_and_mixed_layouts_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "sub" / "notes.txt").write_text("x")
    with pytest.raises(ClawloopError, match="empty: no known task layout"):
        detect_format(tmp_path / "empty")
    mixed = tmp_path / "mixed"
    shutil.copytree(FIX / "clawgym" / "sales-total", mixed / "sales-total")
    shutil.copytree(HARBOR / "word-count", mixed / "word-count")
    with pytest.raises(ClawloopError, match=r"mixed task layouts \(harbor, clawgym\)"):
        detect_format(mixed)
    with pytest.raises(ClawloopError, match="no such suite"):
        detect_format(tmp_path / "nope")
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(ClawloopError, match="not a suite"):
        detect_format(tmp_path / "x.txt")


def test_load_suite_any_options_are_checked() -> None:
    with pytest.raises(ClawloopError, match="--format: unknown format 'xml'"):
        load_suite_any(FIX / "clawgym", "xml")
    with pytest.raises(ClawloopError, match="--skills: applies to Harbor"):
        load_suite_any(FIX / "clawgym", skills="on")
    with pytest.raises(ClawloopError, match="--skills: expected on or off"):
        load_suite_any(FIX / "skillsbench", skills="maybe")
    with pytest.raises(ClawloopError, match="no clawgym tasks found"):
        load_suite_any(FIX / "skillsbench", "clawgym")


def test_pool_roundtrip_keeps_format_and_takes_grader_root(tmp_path: Path) -> None:
    tasks = load_suite_any(FIX / "claw-eval-live").tasks + load_suite_any(FIX / "clawgym").tasks
    write_pool(tmp_path / "p.jsonl", tasks)
    root = FIX / "claw-eval-live" / "_grader_root"
    suite = load_suite_any(tmp_path / "p.jsonl", grader_root=root)
    assert [t.id for t in suite.tasks] == [t.id for t in tasks]
    cel = [t for t in suite.tasks if "claw_eval_live" in t.metadata]
    assert len(cel) == 4 and all(t.metadata["claw_eval_live"]["grader_root"] == str(root.resolve()) for t in cel)


def test_skills_on_and_off() -> None:
    plain = {i.name: i.task for i in load_suite_any(FIX / "skillsbench").items}
    on = {i.name: i.task for i in load_suite_any(FIX / "skillsbench", skills="on").items}
    off = {i.name: i.task for i in load_suite_any(FIX / "skillsbench", skills="off").items}
    t, t_on, t_off = plain["csv-column-stats"], on["csv-column-stats"], off["csv-column-stats"]
    assert t is not None and t_on is not None and t_off is not None
    skill_files = {"/root/.claude/skills/csv-stats/SKILL.md", "/root/.codex/skills/csv-stats/scripts/colstats.py"}
    assert skill_files <= set(t.files) and skill_files <= set(t_on.files)
    assert not any("/skills/" in p for p in t_off.files) and "/root/data/sales.csv" in t_off.files
    assert t_off.instruction == t.instruction and t_off.metadata["skills"] == "off"
    assert t_on.instruction.startswith(t.instruction.rstrip("\n"))
    assert "- csv-stats: Summary statistics" in t_on.instruction
    assert "(/root/.claude/skills/csv-stats/SKILL.md)" in t_on.instruction
    assert len({t.id, t_on.id, t_off.id}) == 3
    # a Harbor task without skills is left alone
    word = load_suite_any(HARBOR / "word-count").tasks[0]
    assert apply_skills(word, "on") == word and apply_skills(word, "off") == word


def test_skills_without_a_copy_go_to_the_claude_folder(tmp_path: Path) -> None:
    d = tmp_path / "t"
    shutil.copytree(FIX / "skillsbench" / "tasks" / "merge-json-defaults", d)
    df = d / "environment" / "Dockerfile"
    df.write_text(df.read_text().replace("COPY skills /root/.claude/skills\n", ""))
    task = load_suite_any(d).tasks[0]
    assert not any("/skills/" in p for p in task.files)
    on = apply_skills(task, "on")
    assert "/root/.claude/skills/json-merge/SKILL.md" in on.files and "json-merge: Deep-merge" in on.instruction


def rec(outcome: str, reward: float | None, bench: str | None = None) -> EpisodeRecord:
    if bench:
        return EpisodeRecord("t", "n", "s", "k", 1, "oracle", outcome, reward, benchmark=bench)  # type: ignore[arg-type]
    return EpisodeRecord("t", "n", "s", "k", 1, "oracle", outcome, reward)  # type: ignore[arg-type]


def test_score_fields() -> None:
    assert score_fields([rec("passed", 1.0), rec("failed", 0.0)]) == {}
    assert score_fields([rec("failed", 0.5), rec("passed", 1.0), rec("error", None)]) == \
        {"mean_score": 0.75, "full_score_rate": 0.5}
    assert score_fields([rec("passed", 1.0, "clawgym"), rec("failed", 0.0, "clawgym")]) == \
        {"mean_score": 0.5, "full_score_rate": 0.5}
    assert score_fields([rec("error", None, "claw-eval-live")]) == {"mean_score": None, "full_score_rate": None}


@needs_bwrap
def test_skills_on_oracles_pass() -> None:  # --skills off through the CLI below
    suite = load_suite_any(FIX / "skillsbench", skills="on")
    assert [run_episode(t, "oracle").outcome for t in suite.tasks] == ["passed"] * 3


def clawloop(*args: str) -> subprocess.CompletedProcess[str]:
    prog = "import sys; from clawloop.cli import main; sys.argv = ['clawloop'] + sys.argv[1:]; main()"
    return subprocess.run([sys.executable, "-c", prog, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def summary_of(r: subprocess.CompletedProcess[str]) -> dict:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@needs_bwrap
def test_cli_eval_each_format(tmp_path: Path) -> None:
    root = FIX / "claw-eval-live" / "_grader_root"
    out = tmp_path / "run"
    both = summary_of(clawloop("eval", str(FIX / "clawgym"), str(FIX / "claw-eval-live"), "--grader-root", str(root),
                               "--agent", "oracle", "--json", "-j", "4", "--out", str(out)))
    gym, live = both["suites"]["clawgym"], both["suites"]["claw-eval-live"]
    assert (gym["passed"], gym["tasks"], gym["mean_score"], gym["full_score_rate"]) == (4, 4, 1.0, 1.0)
    assert (live["passed"], live["skipped"], live["mean_score"]) == (3, 1, 1.0)
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert {r["benchmark"] for r in rows} == {"clawgym", "claw-eval-live"}
    assert sum(1 for r in rows if r["scores"] and r["scores"]["completion"] == 1.0) == 3
    noop = summary_of(clawloop("eval", str(FIX / "clawgym"), "--format", "clawgym", "--agent", "noop", "--json",
                               "-j", "4"))
    assert noop["failed"] == 4 and noop["suites"]["clawgym"]["mean_score"] == 0.0
    off = summary_of(clawloop("eval", str(FIX / "skillsbench"), "--skills", "off", "--agent", "oracle", "--json"))
    assert (off["passed"], off["failed"]) == (1, 2) and "mean_score" not in off


@needs_bwrap
def test_cli_bad_input(tmp_path: Path) -> None:
    (tmp_path / "nothing").mkdir()
    r = clawloop("eval", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "no known task layout" in r.stderr and "Traceback" not in r.stderr
    suite = tmp_path / "gym"
    shutil.copytree(FIX / "clawgym" / "sales-total", suite / "sales-total")
    shutil.copytree(FIX / "clawgym" / "sales-total", suite / "no-float")
    (suite / "no-float" / "reward" / "reward.sh").write_text("#!/bin/bash\necho done\n")
    shutil.copytree(FIX / "clawgym" / "sales-total", suite / "no-query")
    (suite / "no-query" / "data_entry.json").write_text('{"task_id": "no-query", "metadata": {}}')
    s = summary_of(clawloop("eval", str(suite), "--agent", "oracle", "--json"))
    assert (s["passed"], s["errors"]) == (1, 2)
    why = {e["task"]: e["reason"] for e in s["errors_detail"] + s["unloadable_detail"]}
    assert why["no-float"] == "reward.sh printed no float (last line: 'done')"
    assert "no-query/data_entry.json: user_query: missing" in why["no-query"]
