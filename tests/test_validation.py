"""Agent-free validation: each rejection reason, the report, the CLI, fast and step-by-step paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clawloop.cli import app
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.pool import read_pool, write_pool
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.phases.validate.agent_free import (
    AgentFreeParams,
    HeldoutIndex,
    NearDuplicateIndex,
    shingles,
    validate_pool,
)

FIXTURES = Path(__file__).parent / "fixtures" / "harbor"
PASS_IF = ('mkdir -p /logs/verifier\nif {cond}; then echo 1 > /logs/verifier/reward.txt; '
           'else echo 0 > /logs/verifier/reward.txt; fi\n')


def task(instruction: str, cond: str, steps: list[str] | None, **kw: object) -> Task:
    return Task(instruction=instruction,
                verifier=Verifier(files={"test.sh": FileSpec.of("#!/bin/bash\n" + PASS_IF.format(cond=cond), 0o755)}),
                solution=Solution(steps=steps) if steps is not None else None, **kw)  # type: ignore[arg-type]


LONG = " ".join(f"word{i}" for i in range(80))


def _pool() -> list[Task]:
    good = task(f"Write the word alpha into /workspace/out.txt and nothing else. {LONG}", '[ "$(cat out.txt)" = alpha ]',
                ["echo alpha > out.txt"], files={"/workspace/in.txt": FileSpec.of("one two three\n")})
    return [
        good,
        good.model_copy(update={"skill": "other"}),  # same content, other skill: duplicate
        task(f"Write   the word ALPHA into /workspace/out.txt and nothing else! {LONG.replace('word40', 'w40')}",
             '[ "$(cat out.txt)" = alpha ]', ["echo alpha > out.txt"],
             files={"/workspace/in.txt": FileSpec.of("one two three\n")}),  # near-duplicate
        task("Anything goes here, the verifier is happy.", "true", ["true"]),  # no-op passes
        task("Write beta into /workspace/b.txt.", '[ -f b.txt ]', ["echo nope"]),  # oracle fails
        task("Write gamma into /workspace/g.txt.", '[ -f g.txt ]', None),  # no solution
        task("Write delta into /workspace/d.txt.", '[ -f d.txt ]', ["echo d > d.txt"], setup=["exit 4"]),
        # passes from a clean start only: the no-op's verifier run leaves /workspace/.seen behind
        task("Write epsilon into /workspace/e.txt.", "[ -f e.txt ] && [ ! -f .seen ]; s=$?; touch .seen; [ $s = 0 ]",
             ["echo e > e.txt"]),
        task("Count the lines of /workspace/data.csv and write the number to /workspace/n.txt now.",
             '[ "$(cat n.txt)" = 3 ]', ["wc -l < data.csv > n.txt"],
             files={"/workspace/data.csv": FileSpec.of("a\nb\nc\n")}),
        task("Convert /root/deck.odp to a PDF file.", "true", ["true"], needs_image="libreoffice"),
        task("Print the words in all text files under the docs folder and count them per file please.",
             "true", ["true"]),  # held-out overlap (the word-count fixture's wording)
    ]


def test_indexes() -> None:
    held = HeldoutIndex([load_harbor_task(FIXTURES / "word-count")], n=8)
    t = task("Count the words in every `.txt` file under `/app/docs` (including sub-directories).", "true", ["true"])
    share, hid = held.overlap(t)
    assert share == 1.0 and hid is not None
    near = NearDuplicateIndex(0.9)
    p = AgentFreeParams()
    near.add("a", shingles(t, p))
    assert near.match(shingles(t, p))[0] == "a"
    other = t.model_copy(update={"files": {"/workspace/x": FileSpec.of(" ".join(f"w{i}" for i in range(300)))}})
    assert near.match(shingles(other, p))[0] is None


@pytest.mark.parametrize("fast", [True, False])
def test_validate_pool_reasons(backend: str, fast: bool) -> None:
    pool = _pool()
    held = [task("Print all the words in all text files under the docs folder and count them per file please.",
                 "true", ["true"])]
    kept, rep = validate_pool(pool, backend, 2, held, AgentFreeParams(fast=fast), parse_errors=["p.jsonl:9: bad"])
    assert [t.instruction[:20] for t in kept] == [pool[0].instruction[:20], pool[8].instruction[:20]]
    assert rep["rejected"] == {"parse": 1, "duplicate": 1, "heldout_overlap": 1, "needs_image": 1, "no_solution": 1,
                               "setup_error": 1, "noop_passes": 1, "oracle_fails": 1, "nondeterministic": 1,
                               "near_duplicate": 1}
    assert rep["input"] == 12 and rep["kept"] == 2 and rep["examples"]["near_duplicate"][0]["id"] == pool[2].id
    assert pool[0].id in rep["examples"]["near_duplicate"][0]["detail"]
    assert "exit status" in rep["examples"]["setup_error"][0]["detail"] or "status 4" in \
        rep["examples"]["setup_error"][0]["detail"]
    assert rep["tasks_per_s"] > 0 and rep["backend"] == backend


def test_validate_cli(backend: str, tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, [load_harbor_task(FIXTURES / n) for n in ("region-totals", "word-count")] + _pool()[:2])
    with pool.open("a") as f:
        f.write("not json\n")
    out, report = tmp_path / "valid.jsonl", tmp_path / "rejections.json"
    res = CliRunner().invoke(app, ["tasks", "validate", str(pool), "--out", str(out), "--rejections", str(report),
                                   "--backend", backend, "--jobs", "2", "--no-heldout",
                                   "--json", "--skip-bad-lines"])
    assert res.exit_code == 0, res.output
    rep = json.loads(report.read_text())
    assert rep == json.loads(res.output.strip().splitlines()[-1])
    assert rep["kept"] == 3 and rep["rejected"] == {"parse": 1, "duplicate": 1}
    assert len(read_pool(out)) == 3
    res = CliRunner().invoke(app, ["tasks", "validate", str(pool), "--out", str(out), "--rejections", str(report),
                                   "--backend", backend, "--heldout", str(FIXTURES), "--skip-bad-lines"])
    assert res.exit_code == 0 and json.loads(report.read_text())["rejected"]["heldout_overlap"] == 2


def test_validate_refuses_unreadable_input(tmp_path: Path) -> None:
    """Rejected tasks are normal; malformed lines (not JSON, not a task) are bad input: exit 2,
    each line named, nothing written, unless --skip-bad-lines."""
    import subprocess
    import sys

    pool = tmp_path / "pool.jsonl"
    pool.write_text('not json\n{"instruction": "x"}\n')
    out, report = tmp_path / "valid.jsonl", tmp_path / "rejections.json"
    args = ["tasks", "validate", str(pool), "--out", str(out), "--rejections", str(report), "--no-heldout"]
    prog = "import sys; from clawloop.cli import main; sys.argv = ['clawloop'] + sys.argv[1:]; main()"
    p = subprocess.run([sys.executable, "-c", prog, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "pool.jsonl:1: not valid JSON" in p.stderr and "pool.jsonl:2: verifier: Field required" in p.stderr
    assert "2 of 2 lines malformed" in p.stderr and not out.exists() and not report.exists()
    res = CliRunner().invoke(app, [*args, "--skip-bad-lines"])
    assert res.exit_code == 0, res.output
    assert "kept 0 of 2" in res.output and json.loads(report.read_text())["rejected"] == {"parse": 2}


def test_the_old_flag_name_still_runs_with_a_warning(tmp_path: Path) -> None:
    """`tasks validate --report` was renamed --rejections: scripts calling the old name keep running
    (a hidden alias that warns); leaving both out is typer's usage error, exit 2."""
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, _pool()[:1])
    out, report = tmp_path / "valid.jsonl", tmp_path / "rejections.json"
    res = CliRunner().invoke(app, ["tasks", "validate", str(pool), "--out", str(out), "--report", str(report),
                                   "--no-heldout"])
    assert res.exit_code == 0, res.output
    assert "warning: --report is now --rejections" in res.output and json.loads(report.read_text())["kept"] == 1
    res = CliRunner().invoke(app, ["tasks", "validate", str(pool), "--out", str(out), "--no-heldout"])
    assert res.exit_code == 2 and "'--rejections': this option is required" in res.output, res.output
