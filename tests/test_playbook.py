"""The playbook: its schema and check, rendering into the system prompt, growth and pruning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from clawloop.artifacts.diagnosis import CapabilityReport, CellStats, FailureModeStats
from clawloop.cli import app
from clawloop.config.train import PlaybookParams
from clawloop.core.agent.harness import HarnessConfig, initial_messages, playbook_block, system_prompt
from clawloop.core.agent.playbook import (
    PLAYBOOK_HEADER,
    POLICY_FILE,
    Playbook,
    PlaybookEntry,
    WorkedExample,
    policy_playbook,
    read_playbook,
    strip_playbook,
    write_playbook,
)
from clawloop.core.tasks.task import FileSpec, Task, Verifier
from clawloop.core.trajectory import EPISODE_SCHEMA
from clawloop.errors import ClawloopError
from clawloop.phases.train import playbook as pbk

TASK = Task(instruction="Write hi into a.txt.", skill="files",
            verifier=Verifier(files={"test.sh": FileSpec(content="true")}))


def words(text: str) -> int:
    """A stand-in tokenizer: one token per word."""
    return len(text.split())


def tip(skill: str | None = "json", mode: str | None = None, text: str = "use jq -r", **kw: Any) -> PlaybookEntry:
    return PlaybookEntry(id=kw.pop("id", f"t-{skill}-{mode}-{text}"), kind="tip", skill=skill, failure_mode=mode,
                         text=text, added_iteration=kw.pop("added_iteration", 1), baseline=kw.pop("baseline", 0.0), **kw)


def example(skill: str = "files", commands: tuple[str, ...] = ("echo hi > a.txt",)) -> PlaybookEntry:
    from clawloop.core.agent.playbook import ExampleStep

    ex = WorkedExample(instruction="Write hi into a.txt.", episode_id="e1",
                       steps=[ExampleStep(command=c, exit_code=0) for c in commands])
    return PlaybookEntry(id=f"x-{skill}", kind="example", skill=skill, example=ex, added_iteration=1, baseline=0.0)


def report(cells: dict[str, tuple[int, int]], modes: dict[str, int] | None = None, episodes: int = 20) -> CapabilityReport:
    return CapabilityReport(
        episodes=episodes,
        cells=[CellStats(skill=s, level=1, episodes=n, passes=p, pass_rate=p / n, ci_low=0, ci_high=1)
               for s, (p, n) in cells.items()],
        failure_modes=[FailureModeStats(mode=m, count=c, share=c / episodes) for m, c in (modes or {}).items()])


# --- schema and check -------------------------------------------------------------------------

def test_playbook_round_trips_and_a_policy_dir_carries_it(tmp_path: Path) -> None:
    pb = Playbook(iteration=2, token_budget=100, tokens=20, entries=[tip(), example()])
    write_playbook(tmp_path / POLICY_FILE, pb)
    assert read_playbook(tmp_path / POLICY_FILE) == pb == policy_playbook(tmp_path)
    assert policy_playbook(tmp_path / "nowhere") is None and policy_playbook(None) is None


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d["entries"][0].update(kind="hint"), "entries.0.kind"),
    (lambda d: d["entries"][0].update(text=""), "entries.0.text"),
    (lambda d: d["entries"][1].update(example=None), "entries.1.example"),
    (lambda d: d["entries"][1]["example"].update(steps=[]), "entries.1.example.steps"),
    (lambda d: d["entries"][0].update(baseline=1.5), "entries.0.baseline"),
    (lambda d: d["entries"][0].update(colour="red"), "entries.0.colour"),
    (lambda d: d.update(tokens=500), "tokens"),
    (lambda d: d.update(schema_version=9), "schema_version"),
    (lambda d: d["entries"].append(d["entries"][0]), "entries.2.id"),
    (lambda d: d.pop("token_budget"), "token_budget"),
])
def test_a_malformed_playbook_is_refused_naming_file_and_field(tmp_path: Path, edit: Any, field: str) -> None:
    data = Playbook(token_budget=100, entries=[tip(), example()]).model_dump(mode="json")
    edit(data)
    path = tmp_path / POLICY_FILE
    path.write_text(json.dumps(data))
    with pytest.raises(ClawloopError) as e:
        read_playbook(path)
    assert str(e.value).startswith(f"{path}: {field}")


def test_clawloop_check_accepts_a_playbook_and_refuses_a_bad_one(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    good = tmp_path / "iter-1" / "playbook" / POLICY_FILE
    good.parent.mkdir(parents=True)
    write_playbook(good, Playbook(token_budget=100, entries=[tip()]))
    res = runner.invoke(app, ["check", str(good)])
    assert res.exit_code == 0 and "playbook" in res.output and "1 artifacts valid" in res.output
    bad = tmp_path / "other.json"  # found by its keys, whatever its name
    data = Playbook(token_budget=100, entries=[tip()]).model_dump(mode="json")
    data["entries"][0]["kind"] = "hint"
    bad.write_text(json.dumps(data))
    res = runner.invoke(app, ["check", str(bad)])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit)  # a finding, not a crash
    row = next(x for x in res.output.splitlines() if "other.json" in x)
    assert "entries.0.kind" in row and "Traceback" not in res.output
    # a checkpoint directory's playbook.json is checked with it (the weights' check stubbed out)
    monkeypatch.setattr("clawloop.artifacts.check.check_base", lambda path: path)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / POLICY_FILE).write_text(json.dumps(data))
    from clawloop.artifacts.check import check_checkpoint

    with pytest.raises(ClawloopError, match="entries.0.kind"):
        check_checkpoint(ckpt)


# --- rendering --------------------------------------------------------------------------------

def test_the_harness_renders_the_playbook_into_the_system_prompt() -> None:
    plain = system_prompt(TASK)
    pb = Playbook(token_budget=100, entries=[tip(mode="format_error", skill=None, text="one call a turn"),
                                             tip(), example()])
    cfg = HarnessConfig(playbook=pb)
    text = system_prompt(TASK, cfg)
    assert text.startswith(plain + "\n\n" + PLAYBOOK_HEADER)
    assert "- one call a turn" in text and "- json: use jq -r" in text
    # a worked example in prose: its commands (not HTML-escaped) and exit codes, no call markup the
    # model could copy into one reply as a made-up transcript
    assert "1. `echo hi > a.txt` (exit code 0); then submit." in text
    assert "<tool_call>" not in text.split(PLAYBOOK_HEADER)[1] and "[exit code" not in text
    assert playbook_block(pb, cfg) in text
    # empty or absent: the plain prompt; the block is cut off again for the weights
    assert system_prompt(TASK, HarnessConfig(playbook=Playbook(token_budget=10))) == plain
    msgs = initial_messages(TASK, cfg)
    assert strip_playbook(msgs) == initial_messages(TASK) and strip_playbook(msgs[1:]) == msgs[1:]
    # no submit tool: the example ends without a submit call
    assert "submit" not in playbook_block(pb, HarnessConfig(submit_tool=False, playbook=pb))


def test_rollout_settings_attach_the_policy_dirs_playbook(tmp_path: Path) -> None:
    from clawloop.config.params import load_params
    from clawloop.core.rollout_settings import rollout_settings

    params = load_params(Path(__file__).resolve().parents[1] / "profiles" / "playbook.yaml")
    ctx = rollout_settings(params)
    assert params.train.method == "playbook" and ctx.harness.playbook is None and ctx.harness_for(None).playbook is None
    pb = Playbook(token_budget=100, entries=[tip()])
    write_playbook(tmp_path / POLICY_FILE, pb)
    assert ctx.harness_for(tmp_path).playbook == pb and ctx.harness.playbook is None  # the plain one stays plain


def test_self_trajectories_lose_the_playbook_before_sft(tmp_path: Path) -> None:
    from clawloop.phases.train.data import load_self_trajectories

    cfg = HarnessConfig(playbook=Playbook(token_budget=100, entries=[tip()]))
    msgs = [*initial_messages(TASK, cfg), {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "submit", "arguments": {}}}]}]
    write_episodes(tmp_path / "episodes-00000.parquet", [episode("e", msgs)])
    conv = load_self_trajectories([tmp_path])[0]
    assert conv.messages[0]["content"] == system_prompt(TASK)


# --- building: examples, budget, growth and pruning -------------------------------------------

def episode(eid: str, messages: list[dict[str, Any]], *, skill: str = "files", passed: bool = True,
            format_errors: int = 0) -> dict[str, Any]:
    row = {f.name: None for f in EPISODE_SCHEMA}
    row.update(episode_id=eid, task_id=eid, suite="pool", skill=skill, level=1, passed=passed,
               outcome="passed" if passed else "failed", n_format_errors=format_errors,
               messages=json.dumps(messages))
    return row


def solved(commands: list[str], instruction: str = "Write hi into a.txt.") -> list[dict[str, Any]]:
    from clawloop.core.agent.tool_calls import assistant_message, tool_message

    msgs: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": instruction}]
    for c in commands:
        msgs += [assistant_message(c), tool_message(f"out\n[exit code {1 if 'false' in c else 0}]")]
    return [*msgs, assistant_message(None)]


def write_episodes(path: Path, rows: list[dict[str, Any]]) -> None:
    pq.write_table(pa.Table.from_pylist(rows, schema=EPISODE_SCHEMA), path)


@pytest.fixture()
def rollouts(tmp_path: Path) -> Path:
    d = tmp_path / "pool"
    d.mkdir()
    write_episodes(d / "episodes-00000.parquet", [
        episode("long", solved(["mkdir -p d", "echo hi > d/a", "cat d/a"])),
        episode("short", solved(["echo hi > a.txt"])),
        episode("failed", solved(["echo no"]), passed=False),
        episode("sloppy", solved(["echo x"]), format_errors=1),
        episode("toolong", solved([f"echo {i}" for i in range(9)]), skill="json"),
        episode("csv", solved(["cut -d, -f1 a.csv > b.csv"], "Take the first column."), skill="csv"),
    ])
    return d


def test_examples_are_the_agents_own_short_clean_successes(rollouts: Path) -> None:
    found = pbk.load_examples([rollouts], PlaybookParams())
    assert set(found) == {"files", "csv"}  # json's only success has 9 commands (> max_example_steps)
    assert [e.episode_id for e in found["files"]] == ["short", "long"]  # shortest first; no failed, no format error
    assert found["files"][1].steps[2].command == "cat d/a" and found["files"][1].steps[2].exit_code == 0


def test_build_follows_the_report_within_the_token_budget(rollouts: Path) -> None:
    rep = report({"files": (1, 10), "csv": (0, 5), "json": (0, 8), "git": (5, 5)},
                 {"wrong_result": 9, "format_error": 3, "premature_submit": 1, "error_ignored": 2})
    pb = pbk.build_playbook(rep, iteration=1, previous=None, rollouts=[rollouts], count=words,
                            params=PlaybookParams(token_budget=10_000))
    tips = pbk.load_tips()
    assert [e.failure_mode for e in pb.tips if e.skill is None] == ["wrong_result", "format_error", "error_ignored"]
    assert [e.skill for e in pb.tips if e.skill] == ["json", "csv", "files"]  # weakest first; git is not weak
    assert pb.tips[0].text == tips["failure_modes"]["wrong_result"][0]
    assert [e.skill for e in pb.examples] == ["csv", "files"]  # the weaker skill's example first
    assert pb.tokens == words(playbook_block(pb)) <= pb.token_budget
    assert all(e.added_iteration == 1 for e in pb.entries)
    assert pb.tips[-1].baseline == pytest.approx(0.1) and pb.tips[0].baseline == pytest.approx(9 / 20)
    # a tight budget keeps what fits, in priority order, and never goes over
    small = pbk.build_playbook(rep, iteration=1, previous=None, rollouts=[rollouts], count=words,
                               params=PlaybookParams(token_budget=60))
    assert 0 < small.tokens <= 60 and len(small.entries) < len(pb.entries)
    assert small.entries[0] == pb.entries[0].model_copy(update={"tokens": small.entries[0].tokens})
    # nothing to learn from: an empty playbook, and the harness adds nothing
    empty = pbk.build_playbook(report({}), iteration=1, previous=None, rollouts=[], count=words)
    assert empty.entries == [] and empty.tokens == 0 and playbook_block(empty) == ""


def test_entries_that_did_not_help_are_pruned_and_never_come_back(rollouts: Path) -> None:
    params = PlaybookParams(token_budget=10_000, max_examples=0)
    tips = pbk.load_tips()
    first = pbk.build_playbook(report({"json": (0, 8), "csv": (1, 5)}, {"wrong_result": 10}), iteration=1,
                               previous=None, rollouts=[], count=words, params=params)
    assert {(e.skill, e.failure_mode) for e in first.entries} == {("json", None), ("csv", None), (None, "wrong_result")}
    # next report: json stayed at 0, csv rose, wrong_result's share fell
    second = pbk.build_playbook(report({"json": (0, 8), "csv": (3, 5)}, {"wrong_result": 4}), iteration=2,
                                previous=first, rollouts=[], count=words, params=params)
    pruned = {p.skill or p.failure_mode: p.reason for p in second.pruned}
    assert list(pruned) == ["json"] and "stayed" in pruned["json"]
    kept = {e.skill or e.failure_mode: e for e in second.entries}
    assert kept["csv"].baseline == pytest.approx(0.6) and kept["csv"].added_iteration == 1
    assert kept["wrong_result"].baseline == pytest.approx(0.2) and "fell" in kept["wrong_result"].evidence
    assert kept["json"].text == tips["skills"]["json"][1] and kept["json"].added_iteration == 2  # the next variant
    json_v1 = next(e.id for e in first.entries if e.skill == "json")
    assert second.retired == [json_v1]
    # json stays at 0 again, csv fell, wrong_result stayed: all three go; the next variants of csv and
    # wrong_result come in, and json, with no variant left, gets no tip
    third = pbk.build_playbook(report({"json": (0, 8), "csv": (2, 5)}, {"wrong_result": 4}), iteration=3,
                               previous=second, rollouts=[], count=words, params=params)
    assert {p.skill or p.failure_mode for p in third.pruned} == {"json", "csv", "wrong_result"}
    assert {(e.skill or e.failure_mode, e.text) for e in third.entries} == {
        ("csv", tips["skills"]["csv"][1]), ("wrong_result", tips["failure_modes"]["wrong_result"][1])}
    assert len(third.retired) == len(set(third.retired)) == 4
    assert not any(e.id in third.retired for e in third.entries)
    # a skill the report says nothing about keeps its entries as they were
    quiet = pbk.build_playbook(report({}, {}), iteration=4, previous=first, rollouts=[], count=words,
                               params=params.model_copy(update={"prune": True}))
    assert {e.skill for e in quiet.entries if e.skill} == {"json", "csv"}


def test_without_pruning_every_entry_stays(rollouts: Path) -> None:
    params = PlaybookParams(token_budget=10_000, prune=False)
    first = pbk.build_playbook(report({"json": (0, 8)}), iteration=1, previous=None, rollouts=[rollouts],
                               count=words, params=params)
    second = pbk.build_playbook(report({"json": (0, 8)}), iteration=2, previous=first, rollouts=[rollouts],
                                count=words, params=params)
    assert [e.id for e in second.entries] == [e.id for e in first.entries] and not second.pruned


def test_a_policy_without_a_tokenizer_is_counted_by_estimate(tmp_path: Path) -> None:
    count, name = pbk.token_counter(tmp_path)
    assert name == "chars/4" and count("x" * 40) == 10


# --- the train stage -----------------------------------------------------------------------------

def _stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, policy: Path, out: Path,
           rep: CapabilityReport, rollouts: Path, *, reflector: str = "rules",
           pool: list[Task] | None = None) -> dict[str, Any]:
    import sys

    import yaml

    from clawloop.artifacts.probe import write_probe
    from clawloop.config.params import load_params
    from clawloop.core.io import read_json, write_json
    from clawloop.core.tasks.pool import write_pool

    raw = yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / "playbook.yaml").read_text())
    raw["train"]["method"] = method
    raw["train"]["playbook"]["reflector"] = reflector  # the rule tips unless a test drives the reflector
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    validated = tmp_path / "validated"
    validated.mkdir(exist_ok=True)
    write_pool(validated / "valid.jsonl", pool or [TASK])
    write_probe(validated / "probe.jsonl", [])
    write_json(tmp_path / "diagnosis.json", rep.model_dump(mode="json"))
    monkeypatch.setattr(sys, "argv", ["stages/train.py", "--iteration", "1", "--validated", str(validated),
                                      "--policy", str(policy), "--self-rollouts", str(rollouts.parent),
                                      "--diagnosis", str(tmp_path / "diagnosis.json"), "--out", str(out)])
    # `.venv/bin/pytest` (the README's command) puts no repo root on sys.path.
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    import stages.train

    stages.train.main(load_params(tmp_path / "params.yaml"))
    return read_json(out.parent / "train.json")


def test_the_train_stage_keeps_the_weights_and_writes_the_playbook(tmp_path: Path, rollouts: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    policy = tmp_path / "iter-0" / "policy"
    policy.mkdir(parents=True)
    (policy / "model.safetensors").write_bytes(b"weights")
    out = tmp_path / "iter-1" / "checkpoint"
    rep = report({"files": (0, 4), "csv": (0, 4)}, {"format_error": 8})
    metrics = _stage(tmp_path, monkeypatch, "playbook", policy, out, rep, rollouts)
    assert (out / "model.safetensors").stat().st_ino == (policy / "model.safetensors").stat().st_ino  # frozen
    pb = read_playbook(out / POLICY_FILE)
    assert read_playbook(out.parent / "playbook" / POLICY_FILE) == pb and pb.tokenizer == "chars/4"
    assert "## Playbook" in (out.parent / "playbook" / "playbook.md").read_text()
    assert {e.skill or e.failure_mode for e in pb.entries} >= {"format_error", "files", "csv"}
    assert [e.example.episode_id for e in pb.examples if e.example] == ["csv", "short"]
    assert metrics["method"] == "playbook" and metrics["steps"] == 0
    assert metrics["playbook_entries"] == len(pb.entries) == metrics["playbook_added"]
    assert (tmp_path / "iter-1" / "train-log").is_dir()


def test_sft_plus_playbook_trains_sft_then_adds_the_playbook(tmp_path: Path, rollouts: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_train(job: Any, params: Any, setup: Any) -> dict[str, Any]:
        seen.update(method=job.method, harness=setup.harness_config)
        Path(job.out).mkdir(parents=True)
        (Path(job.out) / "model.safetensors").write_bytes(b"new")
        return {"method": job.method, "steps": 3}

    monkeypatch.setattr("clawloop.phases.train.jobs.train", fake_train)
    policy = tmp_path / "policy"
    policy.mkdir()
    write_playbook(policy / POLICY_FILE, Playbook(token_budget=100, entries=[tip(skill="csv", baseline=0.5)]))
    out = tmp_path / "iter-1" / "checkpoint"
    metrics = _stage(tmp_path, monkeypatch, "sft+playbook", policy, out,
                     report({"csv": (1, 4)}, {"wrong_result": 3}), rollouts)
    assert seen["method"] == "sft" and seen["harness"].playbook is None  # the weights see the plain prompt
    assert metrics["method"] == "sft+playbook" and metrics["steps"] == 3 and metrics["playbook_pruned"] == 1
    pb = read_playbook(out / POLICY_FILE)
    assert pb.pruned[0].skill == "csv" and "fell" in pb.pruned[0].reason and pb.retired == [pb.pruned[0].id]
    # a weight-only method writes an empty artifact (a declared DVC output) and no playbook.json
    out2 = tmp_path / "iter-2" / "checkpoint"
    _stage(tmp_path, monkeypatch, "sft", policy, out2, report({}), rollouts)
    assert read_playbook(out2.parent / "playbook" / POLICY_FILE).entries == []
    assert not (out2 / POLICY_FILE).exists()


def test_clawloop_eval_renders_a_model_dirs_playbook_or_the_one_given(tmp_path: Path) -> None:
    from clawloop.core.agent.model_agent import eval_playbook
    from clawloop.policy.load import parse_spec

    pb = Playbook(token_budget=100, entries=[tip()])
    write_playbook(tmp_path / POLICY_FILE, pb)
    assert eval_playbook(parse_spec(str(tmp_path))) == pb == eval_playbook(parse_spec(f"llamacpp:{tmp_path}"))
    assert eval_playbook(parse_spec("openai:m@http://127.0.0.1:9/v1")) is None
    other = tmp_path / "other.json"
    write_playbook(other, Playbook(token_budget=50))
    assert eval_playbook(parse_spec("openai:m@http://x/v1"), other) == Playbook(token_budget=50)
