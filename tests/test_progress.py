"""Progress of long commands: plain lines outside a terminal (rate-limited), a live bar on one,
and consoles that never wrap. A fake clock keeps every test deterministic."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from clawloop.core.progress import MAX_INTERVAL_S, Progress, clock_text, console, next_interval, progress_for


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def plain(total: int | None = 10, unit: str = "episodes", label: str = "eval model") -> tuple[Progress, io.StringIO, Clock]:
    stream, clock = io.StringIO(), Clock()
    return Progress(label, total, unit, live=False, stream=stream, clock=clock, ticker=False), stream, clock


def test_first_line_at_once_then_counts_tokens_rate_and_eta() -> None:
    p, stream, clock = plain()
    with p:
        assert stream.getvalue() == "[eval model] 0/10 episodes (0%) · elapsed 0:00 · ETA ?\n"
        for outcome in ("passed", "failed", "passed", "error"):
            clock.t += 5
            p.advance(outcome=outcome)
            p.add_tokens(500)
        assert p.tick()
        assert not p.tick()  # the next line is not due yet
    lines = stream.getvalue().splitlines()
    assert lines[1] == ("[eval model] 4/10 episodes (40%) · passed 2, failed 1, error 1 · 100 tok/s · "
                        "0.2 episodes/s · elapsed 0:20 · ETA 0:30")
    assert lines[-1].endswith("done in 0:20") and len(lines) == 3


def test_plain_lines_never_flood() -> None:
    """An hour of work finishing every second prints tens of lines, not thousands."""
    p, stream, clock = plain(total=3600)
    with p:
        for _ in range(3600):
            clock.t += 1
            p.advance(outcome="passed")
            p.tick()
    n = len(stream.getvalue().splitlines())
    assert 20 <= n <= 120
    assert [next_interval(e) for e in (0, 30, 100, 600, 7200)] == [5.0, 5.0, 10.0, MAX_INTERVAL_S, MAX_INTERVAL_S]


def test_free_fields_steps_and_a_resumed_start() -> None:
    p, stream, clock = plain(total=30, unit="steps", label="train sft")
    with p:
        p.start_at(10)  # resumed at step 10: the rate counts only this run's steps
        clock.t += 20
        p.set_done(12)
        p.set(loss=2.31456)
        assert p.tick()
    line = stream.getvalue().splitlines()[1]
    assert line == "[train sft] 12/30 steps (40%) · loss 2.315 · 0.1 steps/s · elapsed 0:20 · ETA 3:00"


def test_heartbeat_without_total_and_clock_text() -> None:
    p, stream, clock = plain(total=None, unit="", label="bootstrap")
    with p:
        clock.t += 7
        p.tick()
    assert stream.getvalue().splitlines() == ["[bootstrap] elapsed 0:00", "[bootstrap] elapsed 0:07",
                                              "[bootstrap] done in 0:07"]
    assert (clock_text(None), clock_text(65), clock_text(3723)) == ("?", "1:05", "1:02:03")


def test_track_closes_when_the_loop_raises() -> None:
    p, stream, clock = plain(total=5, unit="steps", label="pretrain")
    with pytest.raises(RuntimeError):
        for step in p.track(range(5)):
            if step == 2:
                raise RuntimeError("boom")
    assert p.closed and stream.getvalue().splitlines()[-1].startswith("[pretrain] 2/5 steps (40%)")
    q, stream, clock = plain(total=5, unit="proposals", label="propose")
    assert [len(b) for b in q.track([[1, 2], [3, 4], [5]], size=len)] == [2, 2, 1]
    assert q.done == 5 and q.closed


def test_proposer_shows_proposals_and_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    from scripted_policy import ScriptedPolicy

    from clawloop.phases.synthesize.grounded.attempts import Attempts
    from clawloop.phases.synthesize.grounded.proposer import propose_tasks

    tasks, stats = propose_tasks(ScriptedPolicy(["not a proposal"]), Attempts(n=3, progress=True))
    assert tasks == [] and stats["attempts"] == 3
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("[propose] 3/3 proposals (100%) · ") and " tok/s · " in last


def test_ticker_prints_while_nothing_finishes() -> None:
    """Signs of life while a batch is still generating: the ticker prints without any advance."""
    stream = io.StringIO()
    with Progress("eval model", 3, live=False, stream=stream, interval=0.1):
        deadline = time.monotonic() + 60
        while len(stream.getvalue().splitlines()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(stream.getvalue().splitlines()) >= 4  # start, two ticks, the last line


def test_live_bar_on_a_terminal_with_nested_rows() -> None:
    stream = io.StringIO()
    with Progress("bootstrap", unit="", live=True, stream=stream), \
            Progress("pretrain", 3, "steps", live=True, stream=stream) as inner:
        inner.advance()
        inner.add_tokens(10)
    out = stream.getvalue()
    assert "\x1b[" in out and "pretrain" in out and "bootstrap" in out
    assert "[pretrain] " not in out  # no plain lines on a terminal


def test_off_and_disabled_print_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    with progress_for(False, "eval") as p:
        p.advance(outcome="passed")
    monkeypatch.setenv("CLAWLOOP_PROGRESS", "off")
    with Progress("eval", 3, stream=stream, live=False) as q:
        q.advance()
        assert not q.tick()
    assert stream.getvalue() == ""
    own = Progress("outer", 2, stream=stream, live=False)
    with progress_for(own, "inner") as same:  # a caller's reporter is used, and left open
        assert same is own


def test_console_never_wraps_outside_a_terminal() -> None:
    from rich.table import Table

    stream = io.StringIO()
    path = "/runs/" + "/".join(["a-rather-long-directory-name"] * 8) + "/pool.jsonl"
    c = console(file=stream)
    c.print(f"error {path}: not valid JSON")
    table = Table("artifact", "status")
    table.add_row(path, "not valid JSON")
    c.print(table)
    lines = stream.getvalue().splitlines()
    assert lines[0] == f"error {path}: not valid JSON"
    assert any(path in line and "not valid JSON" in line for line in lines[1:])


def test_train_progress_callback() -> None:
    from clawloop.phases.train.progress import TrainProgress

    p, stream, clock = plain(total=None, unit="steps", label="train sft")
    cb = TrainProgress(p)
    state = SimpleNamespace(max_steps=30, global_step=10, num_input_tokens_seen=1000)
    with p:
        cb.on_train_begin(None, state, None)
        clock.t += 10
        state.global_step, state.num_input_tokens_seen = 12, 3000
        cb.on_step_end(None, state, None)
        cb.on_log(None, state, None, logs={"loss": 1.5, "learning_rate": 1e-4})
        assert p.tick()
    assert stream.getvalue().splitlines()[1] == (
        "[train sft] 12/30 steps (40%) · loss 1.5 · 200 tok/s · 0.2 steps/s · elapsed 0:10 · ETA 1:30")


ROOT = Path(__file__).resolve().parents[1]


def test_synth_shows_progress_on_the_command_line_and_in_a_stage_log(tmp_path: Path) -> None:
    """`clawloop tasks synth` and the DVC stage print the same plain lines when stderr is a log."""
    from typer.testing import CliRunner

    from clawloop.cli import app

    res = CliRunner().invoke(app, ["tasks", "synth", "--n", "5", "--out", str(tmp_path / "p.jsonl")])
    assert res.exit_code == 0, res.output
    assert "[synth] 0/5 tasks (0%)" in res.output and "[synth] 5/5 tasks (100%)" in res.output
    p = subprocess.run([sys.executable, "-m", "stages.synthesize", "--iteration", "1", "--out",
                        str(tmp_path / "pool")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stderr.splitlines()
    assert lines[0].startswith("[synth] 0/") and any(x.startswith("[synth] ") and "(100%)" in x for x in lines)
    assert len(lines) < 40
    # What each routine produced against its budget (a grounded routine may make fewer than asked).
    import yaml

    n = yaml.safe_load((ROOT / "params.yaml").read_text())["synthesis"]["tasks_per_iteration"]
    assert f"[synthesize] iteration 1: {n} tasks (procedural {n} of {n})" in p.stdout


def test_procedural_makes_up_what_hindsight_cannot_make(tmp_path: Path) -> None:
    """A policy that ran no command in its last evaluation (a base that writes prose) gives
    hindsight nothing to relabel: the stage skips its exploration, and the procedural routine fills the pool
    to its budget instead of leaving it short."""
    import yaml

    from clawloop.artifacts.diagnosis import CapabilityReport

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["synthesis"].update(tasks_per_iteration=40, routines={"procedural": 0.75, "hindsight": 0.25})
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    report = tmp_path / "diagnosis.json"
    report.write_text(CapabilityReport(iteration=0, episodes=72, command_vocabulary=0).model_dump_json())
    # No --policy: a skipped routine must not need one.
    p = subprocess.run([sys.executable, "-m", "stages.synthesize", "--iteration", "1", "--diagnosis", str(report),
                        "--out", str(tmp_path / "pool")], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    assert "40 tasks (hindsight 0 of 10, procedural 40 of 30; procedural made up 10 that the grounded" in p.stdout
    manifest = json.loads((tmp_path / "pool" / "manifest.json").read_text())
    assert manifest["tasks"] == 40 and manifest["refill"] == 10
    assert manifest["routines"]["hindsight"] == {"skipped": "the last evaluation ran no command"}
    assert len((tmp_path / "pool" / "pool.jsonl").read_text().splitlines()) == 40


def test_pretraining_shows_steps_loss_and_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clawloop.bootstrap.scratch import bootstrap

    pre = {"steps": 2, "batch_size": 1, "seq_len": 32, "probe_items": 1, "probe_every": 0}
    bootstrap(tmp_path / "m", size="tiny", seed=0, vocab_size=1024, corpus_pairs=400, pretrain=pre)
    last = [x for x in capsys.readouterr().err.splitlines() if x.startswith("[pretrain] ")][-1]
    assert last.startswith("[pretrain] 2/2 steps (100%) · loss ") and " tok/s · " in last and "done in" in last
