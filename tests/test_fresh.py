"""The curriculum's evidence: fresh instances of the pool's top levels, rolled out by the trained
policy, decide raise / hold / lower (clawloop.phases.synthesize.fresh, stages/diagnose.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from clawloop.phases.diagnose.synthetic import episode_row, step_row, write_trajectories
from clawloop.phases.synthesize.fresh import fresh_cells, fresh_tasks
from clawloop.phases.synthesize.procedural.generate import synthesize
from clawloop.phases.synthesize.steering import Plan

ROOT = Path(__file__).resolve().parents[1]


def _pool() -> list:
    return synthesize(Plan(quotas={("files", 1): 3, ("files", 2): 3, ("json", 1): 2}), 0, iteration=1)


def test_fresh_tasks_are_new_instances_of_each_skills_top_level() -> None:
    pool = _pool()
    assert fresh_cells(pool) == [("files", 2), ("json", 1)]
    fresh = fresh_tasks(pool, 4, seed=0, iteration=1)
    assert sorted((t.skill, t.level) for t in fresh) == [("files", 2)] * 4 + [("json", 1)] * 4
    assert not {t.id for t in fresh} & {t.id for t in pool}
    # not the draws a pool of the same cells, seed and iteration makes: a namespace of their own
    same_cells = synthesize(Plan(quotas={("files", 2): 4, ("json", 1): 4}), 0, iteration=1)
    assert not {t.id for t in fresh} & {t.id for t in same_cells}
    assert [t.id for t in fresh_tasks(pool, 4, seed=0, iteration=1)] == [t.id for t in fresh]  # deterministic
    assert fresh_tasks(pool, 4, seed=0, iteration=1, exclude=fresh[:2]) == fresh[2:]
    assert fresh_tasks(pool, 0, seed=0, iteration=1) == [] and fresh_tasks([], 4, seed=0, iteration=1) == []


def _diagnose(tmp_path: Path, *evals: Path) -> dict:
    out = tmp_path / "diagnosis"
    p = subprocess.run([sys.executable, "-m", "stages.diagnose", "--iteration", "1", "--eval", *map(str, evals),
                        "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads((out / "diagnosis.json").read_text())


def test_the_trained_policys_fresh_episodes_decide_not_the_probe(tmp_path: Path) -> None:
    """The probe (the policy before training) fails level 2 of `files` and the pool sample (tasks
    the trained policy has seen) passes it; the fresh instances say 7 of 8: raise to 3. Without
    them, the probe and pool decide as before."""
    probe = [episode_row(f"p{i}", suite="probe", skill="files", level=2) for i in range(16)]
    pool = [episode_row(f"s{i}", suite="pool", skill="files", level=2, outcome="passed") for i in range(4)]
    fresh = [episode_row(f"f{i}", suite="fresh", skill="files", level=2,
                         outcome="passed" if i else "failed") for i in range(8)]
    for d, rows in ((tmp_path / "probe", probe), (tmp_path / "eval" / "pool", pool)):
        write_trajectories(d, rows, [step_row(e["episode_id"], 0, "cat x") for e in rows])
    before = _diagnose(tmp_path, tmp_path / "eval", tmp_path / "probe")
    assert before["evidence_suites"] == ["pool", "probe", "fresh"]
    assert before["recommendations"][0]["action"] != "raise"

    write_trajectories(tmp_path / "eval" / "fresh", fresh, [step_row(e["episode_id"], 0, "cat x") for e in fresh])
    r = _diagnose(tmp_path, tmp_path / "eval", tmp_path / "probe")
    assert r["evidence_suites"] == ["fresh"]
    assert [(c["skill"], c["level"], c["passes"], c["episodes"]) for c in r["cells"]] == [("files", 2, 7, 8)]
    rec = r["recommendations"][0]
    assert (rec["skill"], rec["action"], rec["level"]) == ("files", "raise", 3), rec
    assert {s["suite"] for s in r["suites"]} == {"probe", "pool", "fresh"}  # all still reported


def test_no_fresh_pass_in_eight_lowers_one_in_eight_holds(tmp_path: Path) -> None:
    rows = [episode_row(f"a{i}", suite="fresh", skill="files", level=2) for i in range(8)]
    rows += [episode_row(f"b{i}", suite="fresh", skill="json", level=2, outcome="passed" if i == 0 else "failed")
             for i in range(8)]
    write_trajectories(tmp_path / "eval" / "fresh", rows, [step_row(e["episode_id"], 0, "ls") for e in rows])
    recs = {r["skill"]: (r["action"], r["level"]) for r in _diagnose(tmp_path, tmp_path / "eval")["recommendations"]}
    assert recs["files"] == ("lower", 1) and recs["json"] == ("hold", 2), recs
