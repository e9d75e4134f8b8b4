"""The reflector: the policy proposes playbook edits on its own held-in episodes; the guards refuse
task-specific text and budget raises; nothing valid falls back to the rule tips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scripted_policy import ScriptedPolicy

from clawloop.artifacts.diagnosis import CapabilityReport, CellStats, FailureModeStats
from clawloop.config.train import PlaybookParams, ReflectionParams
from clawloop.core.agent.playbook import (
    POLICY_FILE,
    HarnessEdits,
    Playbook,
    PlaybookEntry,
    read_playbook,
    write_playbook,
)
from clawloop.core.agent.tool_calls import assistant_message, tool_message
from clawloop.core.tasks.task import FileSpec, Task, Verifier
from clawloop.core.trajectory import EPISODE_SCHEMA
from clawloop.phases.train import guards
from clawloop.phases.train import playbook as pbk
from clawloop.phases.train import reflect as rf

INSTRUCTION = "Write the lines of server.log that contain 'ERROR 42' to alerts/errors.txt, at most 37 lines."
LIMITS = guards.BudgetLimits(max_turns=6, command_timeout_s=10, max_new_tokens=96)


def words(text: str) -> int:
    return len(text.split())


def report() -> CapabilityReport:
    return CapabilityReport(
        episodes=10,
        cells=[CellStats(skill="text_search", level=1, episodes=6, passes=1, pass_rate=1 / 6, ci_low=0, ci_high=1),
               CellStats(skill="files", level=1, episodes=4, passes=3, pass_rate=0.75, ci_low=0, ci_high=1)],
        failure_modes=[FailureModeStats(mode="wrong_result", count=5, share=0.5, examples=["f1"]),
                       FailureModeStats(mode="error_ignored", count=2, share=0.2)])


def _episode(eid: str, commands: list[tuple[str, int]], *, skill: str = "text_search", passed: bool = False,
             instruction: str = INSTRUCTION, termination: str = "submit") -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": instruction}]
    for c, code in commands:
        msgs += [assistant_message(c), tool_message(f"some output\n[exit code {code}]")]
    msgs.append(assistant_message(None))
    row = {f.name: None for f in EPISODE_SCHEMA}
    row.update(episode_id=eid, task_id=f"task-{eid}", suite="pool", skill=skill, level=1, passed=passed,
               outcome="passed" if passed else "failed", termination=termination, n_format_errors=0,
               messages=json.dumps(msgs))
    return row


@pytest.fixture()
def rollouts(tmp_path: Path) -> Path:
    d = tmp_path / "pool"
    d.mkdir()
    rows = [_episode("f1", [("grep ERROR server.log > alerts/errors.txt", 0)]),
            _episode("f2", [("grep -c 42 server.log", 0)]),
            _episode("p1", [("cp a.txt b.txt", 0)], skill="files", passed=True, instruction="Copy a.txt to b.txt.")]
    pq.write_table(pa.Table.from_pylist(rows, schema=EPISODE_SCHEMA), d / "episodes-00000.parquet")
    return d


def current() -> Playbook:
    tips = [PlaybookEntry(id="old-mode", kind="tip", failure_mode="wrong_result", text="Check the result.",
                          added_iteration=1, baseline=0.6),
            PlaybookEntry(id="old-files", kind="tip", skill="files", text="Use cp -r for directories.",
                          added_iteration=1, baseline=0.5)]
    return Playbook(token_budget=1000, entries=tips)


GOOD = "When a task asks for matching lines, grep for the exact words of the task and write them with >."
REPLY = "Here are my edits:\n```json\n" + json.dumps({"edits": [
    {"op": "add", "skill": "text_search", "text": GOOD},
    {"op": "add", "skill": "text_search", "text": "The answer goes in alerts/errors.txt."},     # a path
    {"action": "add", "mode": "wrong_result", "tip": "grep 'ERROR 42' is what the test wants."},  # a literal
    {"op": "add", "failure_mode": "error_ignored", "text": "Keep at most 37 lines."},            # a number
    {"op": "add", "skill": "text_search", "text": "Read server.log before writing."},            # a file
    {"op": "remove", "id": "T1", "reason": "it did not help"},
    {"op": "revise", "id": "T2", "text": "Copy directories with cp -r and check them with ls -la."},
    {"op": "harness", "field": "max_turns", "value": 20, "reason": "more turns"},                # budget raise
    {"op": "harness", "field": "max_new_tokens", "value": 4096},                                # not learnable
    {"op": "harness", "field": "observation_chars", "value": 4000, "reason": "outputs were cut"},
    {"op": "add", "skill": "painting", "text": "Paint it."},
]}) + "\n```"


def test_parse_edits_is_lenient() -> None:
    edits, err = rf.parse_edits(REPLY)
    assert err is None and len(edits) == 11 and edits[2] == {
        "op": "add", "failure_mode": "wrong_result", "text": "grep 'ERROR 42' is what the test wants."}
    bare, _ = rf.parse_edits('Sure. [{"type": "delete", "entry": "T1"}] Done.')
    assert bare == [{"op": "remove", "id": "T1"}]
    one, _ = rf.parse_edits('{"skill": "csv", "tip": "keep the header"}')
    assert one == [{"op": "add", "skill": "csv", "text": "keep the header"}]
    assert rf.parse_edits("I think the agent should try harder.") == ([], "no JSON edit list found in the reply")


def test_the_text_guard_refuses_what_names_a_seen_task() -> None:
    task = Task(instruction=INSTRUCTION, skill="text_search", metadata={"harbor": {"name": "text_search-l1-0007"}},
                files={"/workspace/server.log": FileSpec(content="x"),
                       "/workspace/reports/q3-summary.md": FileSpec(content="y")},
                verifier=Verifier(files={"test.sh": FileSpec(content="true")}))
    seen = guards.specifics_of([{"episode_id": "e", "task_id": "t", "messages": [
        {"role": "user", "content": INSTRUCTION}, assistant_message("head -n 37 server.log | tee out.txt"),
        tool_message("inventory_2031.csv\n[exit code 0]")]}], [task])
    refused = {
        "Write to alerts/errors.txt.": "path",
        "Put it under /workspace/alerts first.": "path",
        "Open server.log first.": "server.log",
        "Look at q3-summary.md.": "q3-summary.md",
        "ls shows inventory_2031.csv; read it.": "inventory_2031.csv",
        "Search for ERROR 42 lines.": "error 42",
        "Keep 37 lines.": "37",
        "Solve text_search-l1-0007 like this.": "task",
    }
    for text, why in refused.items():
        reason = guards.check_text(text, seen)
        assert reason is not None and why in reason, (text, reason)
    for generic in ["Read the exit code of every command; when it is not 0, fix the command before going on.",
                    "grep PATTERN FILE > out.txt saves the matching lines; -v inverts, -c counts.",
                    "sed -i 's/OLD/NEW/g' FILE replaces in place.", "chmod 755 FILE sets the mode exactly.",
                    "Write output files into /workspace only, and check them with ls -la.",
                    "Keep the input/output order unless the task asks to sort."]:
        assert guards.check_text(generic, seen) is None, generic


def test_a_tip_asking_for_more_budget_is_refused() -> None:
    """What the frozen Qwen2.5-Coder-0.5B reflector proposed in a measured loop run: the budget
    raise written as advice, which the agent cannot follow and the harness never grants."""
    seen = guards.specifics_of([], [])
    for text in ["Increase the command timeout to 15 seconds to allow for longer tasks.",
                 "Use more turns when a task is long.", "Set the timeout to 30 and retry."]:
        assert "asks for more budget" in (guards.check_text(text, seen) or ""), text
    for text in ["Write more lines with >> instead of >.", "Do not run the same command twice; each turn should make progress.",
                 "Use head -n 5 to see the first lines."]:
        assert guards.check_text(text, seen) is None, text


def test_budget_guard_refuses_a_raise() -> None:
    assert "not learnable upward" in guards.check_edits(HarnessEdits(max_turns=7), LIMITS)
    assert "not learnable upward" in guards.check_edits(HarnessEdits(command_timeout_s=11), LIMITS)
    assert "outside" in guards.check_edits(HarnessEdits(observation_chars=9000), LIMITS)
    assert guards.check_edits(HarnessEdits(max_turns=6, command_timeout_s=5, observation_chars=4000), LIMITS) is None
    assert "rollout.max_new_tokens 96" in guards.check_budget_field("max_new_tokens", 4096, LIMITS)


def test_only_the_good_edits_land(rollouts: Path) -> None:
    episodes = rf.read_episodes([rollouts])
    prev = current()
    seen: list[list[dict[str, Any]]] = []

    def generate(messages: list[dict[str, Any]]) -> str:
        seen.append(messages)
        return REPLY

    r = rf.reflect(generate, report=report(), episodes=episodes, previous=prev, tasks=[], limits=LIMITS,
                   iteration=2, harness={"max_turns": 6}, params=ReflectionParams(max_edits=12))
    prompt = seen[0][0]["content"]
    assert "### wrong_result in text_search" in prompt and "[T1] (wrong_result) Check the result." in prompt
    assert "FAILED: Task: Write the lines" in prompt and "PASSED: Task: Copy a.txt" in prompt
    assert r.episodes == ["f1", "f2", "p1"] and not r.fallback
    verdicts = [(x.status, x.reason.split(" (")[0]) for x in r.edits]
    assert verdicts[0] == ("accepted", "tip for text_search")
    assert [v[1].split(":")[0] for v in verdicts[1:5]] == ["task-specific"] * 4
    assert "path" in r.edits[1].reason and "error 42" in r.edits[2].reason
    assert "37" in r.edits[3].reason and "server.log" in r.edits[4].reason
    assert verdicts[5][0] == verdicts[6][0] == "accepted"
    assert "not learnable upward" in r.edits[7].reason and "not learnable" in r.edits[8].reason
    assert r.edits[9].status == "accepted" and r.harness == [HarnessEdits(observation_chars=4000)]
    assert "unknown skill" in r.edits[10].reason
    pb = pbk.build_playbook(report(), iteration=2, previous=prev, rollouts=[rollouts], count=words,
                            params=PlaybookParams(token_budget=10_000), reflection=r)
    tips = {e.text for e in pb.tips}
    assert GOOD in tips and "Copy directories with cp -r and check them with ls -la." in tips
    assert not any(x in " ".join(tips) for x in ("alerts/", "ERROR 42", "37", "server.log", "Check the result."))
    assert not any(e.failure_mode == "error_ignored" for e in pb.tips)  # no rule tip: the reflector answered
    reasons = {p.id: p.reason for p in pb.pruned}
    assert reasons == {"old-mode": "removed by the reflector: it did not help", "old-files": "revised by the reflector"}
    assert set(pb.retired) == {"old-mode", "old-files"} and pb.examples  # the agent's own success stays an example
    assert all("reflector" in e.evidence for e in pb.tips)


def test_nothing_valid_falls_back_to_the_rule_tips(rollouts: Path) -> None:
    episodes = rf.read_episodes([rollouts])
    for reply in ["The agent should be more careful.", json.dumps({"edits": [
            {"op": "add", "skill": "text_search", "text": "Use server.log."}]})]:
        r = rf.reflect(lambda m, reply=reply: reply, report=report(), episodes=episodes, previous=None, tasks=[],
                       limits=LIMITS, iteration=1, harness={})
        assert r.fallback and r.tip_edits == 0
        pb = pbk.build_playbook(report(), iteration=1, previous=None, rollouts=[rollouts], count=words,
                                params=PlaybookParams(token_budget=10_000), reflection=r)
        rules = pbk.build_playbook(report(), iteration=1, previous=None, rollouts=[rollouts], count=words,
                                   params=PlaybookParams(token_budget=10_000))
        assert pb == rules and pb.tips[0].text == pbk.load_tips()["failure_modes"]["wrong_result"][0]


def test_the_train_stage_reflects_with_the_policy_itself(tmp_path: Path, rollouts: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from test_playbook import _stage

    loads: list[str] = []

    def load(self: Any, path: Any, policy_id: str) -> ScriptedPolicy:
        loads.append(str(path))
        return ScriptedPolicy([REPLY])

    monkeypatch.setattr("clawloop.core.rollout_settings.RolloutSettings.load_policy", load)
    policy = tmp_path / "iter-0" / "policy"
    policy.mkdir(parents=True)
    (policy / "model.safetensors").write_bytes(b"weights")
    write_playbook(policy / POLICY_FILE, current())
    out = tmp_path / "iter-1" / "checkpoint"
    metrics = _stage(tmp_path, monkeypatch, "playbook", policy, out, report(), rollouts, reflector="model")
    assert loads == [str(out)]  # the checkpoint: the same (frozen) policy that rolls out next
    pb = read_playbook(out / POLICY_FILE)
    assert GOOD in {e.text for e in pb.tips}
    art = out.parent / "playbook"
    saved = json.loads((art / "reflection.json").read_text())
    assert saved["reflector"] == "model" and saved["reply"] == REPLY and len(saved["edits"]) == 11
    md = (art / "playbook.md").read_text()
    assert "## Reflector (model)" in md and "task-specific" in md and "## Harness" in md
    assert "min_dev_tasks" in md  # one validated task: no dev split, the harness stays
    # default max_edits 6: the good add and the removal land, the rest is dropped with its reason
    assert [r["status"] for r in saved["edits"]] == ["accepted", *["dropped"] * 4, "accepted", *["dropped"] * 5]
    assert saved["edits"][-1]["reason"] == "over max_edits (6)"
    assert metrics["reflector_accepted"] == 2 and metrics["reflector_fallback"] is False
    assert metrics["harness_trials"] == 0 and metrics["harness_changed"] == 0


def test_the_reflector_sees_no_held_out_skill(rollouts: Path) -> None:
    # The report's cells count every suite, held-out ones included (InterCode's file systems here);
    # the reflector reads held-in episodes only, so their skills and pass rates stay out of its prompt
    # and a tip written for them is refused.
    held_out = CellStats(skill="intercode-fs1", level=1, episodes=50, passes=7, pass_rate=0.14, ci_low=0, ci_high=1)
    rep = report().model_copy(update={"cells": [*report().cells, held_out]})
    seen: list[str] = []
    reply = json.dumps({"edits": [{"op": "add", "skill": "intercode-fs1", "text": "List the directory first."},
                                  {"op": "add", "skill": "text_search", "text": GOOD}]})

    def generate(messages: list[dict[str, Any]]) -> str:
        seen.append(messages[0]["content"])
        return reply

    r = rf.reflect(generate, report=rep, episodes=rf.read_episodes([rollouts]), previous=None, tasks=[],
                   limits=LIMITS, iteration=1, harness={})
    assert "intercode" not in seen[0] and "text_search 0/2" in seen[0] and "files 1/1" in seen[0]
    assert [(x.status, x.reason) for x in r.edits] == [("dropped", "unknown skill 'intercode-fs1'"),
                                                       ("accepted", "tip for text_search")]


def test_an_episode_failing_in_several_modes_is_shown_once() -> None:
    """A greedy loop is max_turns and repeated_action at once: its group's second appearance shows
    the task's other episodes, and a group with nothing new left gives its slot to the next."""
    loop = [("grep -c 42 server.log", 0)] * 3
    eps = [_episode("a", loop, termination="max_turns"), _episode("b", loop, termination="max_turns"),
           _episode("c", [("grep ERROR server.log", 0)])]
    for e in eps:
        e["steps"] = rf.steps_of(json.loads(e["messages"]))
    assert all({"max_turns", "repeated_action"} <= rf.modes_of(e) for e in eps[:2])
    groups = rf.sample(eps, report(), ReflectionParams(groups=3, failed_per_group=1, passed=0))
    shown = [e["episode_id"] for g in groups for e in g["failed"]]
    assert sorted(shown) == ["a", "b", "c"] and len(groups) == 3
