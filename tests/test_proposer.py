"""Grounded synthesis, proposer: the proposal format, rejections by reason, conditioning on the report, and
agent-free validation of proposals written by a scripted policy."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from typing import Any

import pytest
from scripted_policy import ScriptedPolicy

from clawloop.artifacts.diagnosis import CapabilityReport, CellStats, FailureModeStats, Recommendation
from clawloop.config.synthesis import ProposerParams
from clawloop.errors import ClawloopError
from clawloop.phases.synthesize.grounded.attempts import Attempts
from clawloop.phases.synthesize.grounded.proposer import (
    ProposalError,
    parse_proposal,
    prompt,
    proposal_task,
    propose_tasks,
)
from clawloop.phases.synthesize.grounded.routines import synthesize_grounded
from clawloop.phases.synthesize.steering import failure_modes, plan_targets, weak_skills
from clawloop.policy.types import Generation

GOOD = """Sure, here it is.
<task skill="text_search" level="2">
<instruction>
Write every line of server.log that contains ERROR to errors.txt, keeping their order.
</instruction>
<file path="server.log" mode="644">
INFO boot
ERROR disk full
INFO ready
ERROR timeout
</file>
<file path="/workspace/bin/run.sh" mode="755">
#!/bin/bash
echo run
</file>
<test>
printf 'ERROR disk full\\nERROR timeout\\n' > /tmp/want
cmp -s /tmp/want errors.txt
</test>
<solution>
<step>grep ERROR server.log > errors.txt</step>
</solution>
</task>
trailing chatter is ignored"""


def variant(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


ALWAYS_PASSES = variant(variant(GOOD, "cmp -s /tmp/want errors.txt", "true"), "keeping their order", "in order")
SOLUTION_FAILS = variant(variant(GOOD, "<step>grep ERROR server.log > errors.txt</step>",
                                 "<step>grep INFO server.log > errors.txt</step>"), "keeping their order", "as is")
NO_TEST = variant(GOOD, "<test>", "<tset>")
GARBAGE = "I think the agent should practise grep. ls -la"


def backend() -> str:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    return "bwrap"


def in_turn(replies: list[str]) -> Callable[[Any], str]:
    """Replies in call order (every proposal conversation has no assistant turn yet)."""
    it = iter(replies)
    return lambda conv: next(it, "")


def report() -> CapabilityReport:
    cells = [CellStats(skill="text_search", level=2, episodes=20, passes=2, pass_rate=0.1, ci_low=0.0, ci_high=0.3),
             CellStats(skill="files", level=1, episodes=20, passes=19, pass_rate=0.95, ci_low=0.8, ci_high=1.0),
             CellStats(skill="sort_count", level=3, episodes=10, passes=4, pass_rate=0.4, ci_low=0.1, ci_high=0.7)]
    modes = [FailureModeStats(mode="wrong_result", count=9, share=0.5),
             FailureModeStats(mode="infra_error", count=20, share=0.6),
             FailureModeStats(mode="error_ignored", count=3, share=0.2)]
    recs = [Recommendation(skill="archives", action="lower", level=1, reason="fails")]
    return CapabilityReport(iteration=1, cells=cells, failure_modes=modes, recommendations=recs)


# ------------------------------------------------------------------------------ the format
def test_parse_good_proposal() -> None:
    p = parse_proposal(GOOD)
    assert p.skill == "text_search" and p.level == 2
    assert p.instruction.startswith("Write every line") and p.steps == ["grep ERROR server.log > errors.txt"]
    assert p.files["/workspace/server.log"].content == "INFO boot\nERROR disk full\nINFO ready\nERROR timeout\n"
    assert p.files["/workspace/bin/run.sh"].mode == 0o755
    assert p.test.startswith("printf") and p.test.endswith("errors.txt\n")
    t = proposal_task(p, skill="files", level=1, iteration=3, seed=5, modes=("wrong_result",))
    assert t.skill == "text_search" and t.level == 2 and t.provenance.routine == "proposer"
    assert t.provenance.iteration == 3 and set(t.verifier.files) == {"test.sh", "check.sh"}
    assert "mode:wrong_result" in t.tags


@pytest.mark.parametrize(("reply", "reason"), [
    ("", "empty"),
    (GARBAGE, "no_task"),
    (NO_TEST, "no_test"),
    (variant(GOOD, "<instruction>", "<instr>"), "no_instruction"),
    (variant(GOOD, "</instruction>", "</instruction><instruction>again</instruction>"), "multiple_instructions"),
    (variant(GOOD, "<step>grep ERROR server.log > errors.txt</step>", ""), "no_solution"),
    (variant(GOOD, 'path="server.log"', 'path="../etc/passwd"'), "bad_file"),
    (variant(GOOD, 'path="server.log"', 'path="/tests/x"'), "bad_file"),
    (variant(GOOD, 'path="server.log"', 'path="bin/run.sh"'), "bad_file"),
    (variant(GOOD, 'mode="755"', 'mode="rwx"'), "bad_file"),
    (variant(GOOD, 'level="2"', 'level="9"'), "bad_attribute"),
])
def test_parse_rejections(reply: str, reason: str) -> None:
    with pytest.raises(ProposalError) as e:
        parse_proposal(reply)
    assert e.value.reason == reason


def test_too_long_limits() -> None:
    with pytest.raises(ProposalError) as e:
        parse_proposal(GOOD, params=ProposerParams(max_steps=1, max_file_bytes=10))
    assert e.value.reason == "too_long"


# ---------------------------------------------------------------------------- conditioning
def test_conditioning_on_the_report() -> None:
    rep = report()
    known = ["files", "text_search", "sort_count", "archives"]
    assert weak_skills(rep, known) == [("text_search", 2, 0.1), ("sort_count", 3, 0.4), ("archives", 1, 0.5),
                                       ("files", 1, 0.95)]
    assert failure_modes(rep) == ["wrong_result", "error_ignored"]
    targets = plan_targets(rep, known, 400, random.Random(0))
    share = sum(s == "text_search" for s, _ in targets) / len(targets)
    assert share > 0.3 and ("text_search", 2) in targets
    text = prompt("text_search", 2, weak=weak_skills(rep, known), modes=failure_modes(rep), avoid=["grep it"])[0]["content"]
    assert 'skill "text_search" at difficulty level 2' in text and "text_search level 2 (10% solved)" in text
    assert "near-miss distractor" in text and "grep it" in text and "<solution>" in text
    assert plan_targets(None, known, 5, random.Random(0)) and weak_skills(None, known) == []


# ------------------------------------------------------------------------ the routine
class TooLong:
    """A policy whose context the prompt overflows."""

    policy_id = "too-long"

    def generate(self, conversations: list[Any], sampling: Any, *, tools: Any = None) -> list[Generation]:
        return [Generation("", 0, 0, "context") for _ in conversations]


def test_proposer_rejections_are_counted_and_valid_tasks_pass() -> None:
    from clawloop.phases.validate.agent_free import validate_pool

    be = backend()
    replies = [GOOD, ALWAYS_PASSES, SOLUTION_FAILS, GARBAGE, NO_TEST, GOOD]
    policy = ScriptedPolicy(in_turn(replies))
    tasks, stats = propose_tasks(policy, Attempts(n=len(replies), seed=3, report=report(), iteration=2),
                                 ProposerParams(batch_size=4))
    assert policy.calls == [4, 2]
    assert stats["attempts"] == 6 and stats["produced"] == 3
    assert stats["rejected"] == {"duplicate": 1, "no_task": 1, "no_test": 1}
    kept, rep = validate_pool(tasks, backend=be, jobs=2)
    assert [t.instruction for t in kept] == [tasks[0].instruction]
    assert rep["rejected"] == {"noop_passes": 1, "oracle_fails": 1}
    assert kept[0].provenance.routine == "proposer" and kept[0].provenance.iteration == 2


def test_synthesize_grounded_proposer_and_errors() -> None:
    tasks, stats = synthesize_grounded("proposer", ScriptedPolicy([GOOD]), Attempts(n=2, report=report(), iteration=1))
    assert stats["routine"] == "proposer" and stats["attempts"] == 2 and stats["produced"] == 1
    assert stats["rejected"] == {"duplicate": 1} and stats["yield"] == 0.5
    with pytest.raises(ClawloopError):
        synthesize_grounded("teacher", ScriptedPolicy([GOOD]), Attempts(n=1))
    _, stats = synthesize_grounded("proposer", TooLong(), Attempts(n=1))
    assert stats["rejected"] == {"context": 1}


def test_synth_command_writes_pool_and_manifest(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from typer.testing import CliRunner

    from clawloop.cli import app
    from clawloop.core.tasks.pool import read_pool
    from clawloop.phases.synthesize.grounded import routines as grounded

    res = CliRunner().invoke(app, ["tasks", "synth", "--routine", "proposer", "--n", "1", "--out", str(tmp_path / "p.jsonl")])
    assert isinstance(res.exception, ClawloopError) and "--model" in str(res.exception)
    monkeypatch.setattr(grounded, "resolve_policy", lambda spec: ScriptedPolicy(in_turn([GOOD, GARBAGE])))
    info = grounded.synth_command("proposer", "fake", tmp_path / "p.jsonl", Attempts(n=2, iteration=3))
    assert len(read_pool(tmp_path / "p.jsonl")) == 1 and info["stats"]["rejected"] == {"no_task": 1}
    manifest = json.loads((tmp_path / "p.jsonl.manifest.json").read_text())
    assert manifest["routine"] == "proposer" and manifest["stats"]["attempts"] == 2


def test_grounded_imports_stay_light() -> None:
    import subprocess
    import sys

    code = ("import sys, clawloop.phases.synthesize.grounded.routines, clawloop.phases.synthesize.grounded.hindsight, "
            "clawloop.phases.synthesize.grounded.proposer; "
            "print(any(m in sys.modules for m in ('torch', 'transformers', 'trl')))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
