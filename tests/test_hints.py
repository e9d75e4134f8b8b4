"""Generate with help, train without it: the hint a failed task gets, and its removal before SFT."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from clawloop.config.synthesis import Forms
from clawloop.core.agent.harness import initial_messages
from clawloop.core.agent.hints import HINT_PREFIX, hint_for, strip_hint, tools_and_options, with_hint
from clawloop.core.tasks.task import Solution, Task, Verifier
from clawloop.phases.synthesize.procedural.generate import synthesize
from clawloop.phases.synthesize.skills import families
from clawloop.phases.synthesize.steering import Plan


def test_tools_and_their_options_without_values_or_arguments() -> None:
    got = tools_and_options([
        "find 'my logs' -name '*.log' -mtime +30 -delete",
        "grep -c 'a|b' x.txt | sort -rn | head -n 3 > out.txt",
        "cut -d, -f2 --output-delimiter=';' data.csv",
        "LC_ALL=C sort -u list && git commit -qm 'a | b'",
        "cd src && ./build.sh; for f in *.jpeg; do mv \"$f\" \"${f%.jpeg}.jpg\"; done",
        "cat > run.sh <<'EOF'\nrm -rf /\nEOF",
    ])
    assert got == [("find", ["-name", "-mtime", "-delete"]), ("grep", ["-c"]), ("sort", ["-rn", "-u"]),
                   ("head", ["-n"]), ("cut", ["-d", "-f", "--output-delimiter"]), ("git commit", ["-qm"]),
                   ("mv", []), ("cat", [])]


def test_a_hint_names_programs_and_options_never_the_task_s_names_or_values() -> None:
    """Over every family and level: no file or folder name of the task, and nothing but the
    programs and options of its reference, appears in the hint."""
    tasks = synthesize(Plan(quotas={(s, lv): 2 for s in families() for lv in (1, 2, 3, 4, 5)}), 11, 1,
                       forms=Forms(conversational=0.5))
    hinted = 0
    for t in tasks:
        hint = hint_for(t)
        if hint is None:
            continue
        hinted += 1
        assert hint.startswith(HINT_PREFIX) and "\n" not in hint
        allowed = {w for tool, opts in tools_and_options(t.solution.steps) for w in [*tool.split(), *opts]}
        words = set(re.findall(r"[^\s(),]+", hint[len(HINT_PREFIX):].rstrip("."))) - {"and"}
        assert words <= allowed, (t.solution.steps, hint)
        names = {part for path in t.files for part in Path(path).parts[2:] if len(part) > 3}
        assert not {n for n in names if n in hint and n not in allowed}, (sorted(names), hint)
    assert hinted > 0.9 * len(tasks)


def test_the_hint_is_cut_from_the_instruction_and_nothing_else() -> None:
    task = Task(instruction="Count the lines of notes.txt.\n\nWrite the count to n.txt.",
                verifier=Verifier(files={"test.sh": {"content": "true"}}),
                solution=Solution(steps=["wc -l < notes.txt > n.txt"]))
    helped = with_hint(task)
    assert helped is not None and helped.id != task.id
    assert helped.instruction.endswith("\n\nHint: a solution uses wc (-l).")
    plain, with_it = initial_messages(task), initial_messages(helped)
    assert with_it != plain and strip_hint(with_it) == plain
    assert strip_hint(plain) is plain                       # a plain episode is kept as it is
    later = [*plain, {"role": "user", "content": "x\n\nHint: a solution uses ls."}]
    assert strip_hint(later) is later                        # only the instruction turn is cut
    assert with_hint(task.model_copy(update={"solution": None})) is None


def test_help_rollouts_pass_and_train_without_the_hint(tmp_path: Path) -> None:
    """A policy that solves the task only when hinted: the probe finds it frontier, the help
    rollout passes, and SFT's conversation is the plain task's (the hint cut, marked `hinted`)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    from scripted_policy import ScriptedPolicy

    from clawloop.core.agent.rollout import RolloutConfig
    from clawloop.phases.train.data import load_self_trajectories
    from clawloop.phases.validate.probe import help_rollouts, probe_tasks

    test = "test -f /workspace/done && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt"
    task = Task(instruction="Mark the job as finished.", skill="files",
                verifier=Verifier(files={"test.sh": {"content": test}}), solution=Solution(steps=["touch done"]))
    call = '<tool_call>\n{{"name": "{}", "arguments": {}}}\n</tool_call>'
    touch, submit = call.format("bash", '{"command": "touch done"}'), call.format("submit", "{}")

    def reply(conv: list[dict[str, Any]]) -> str:
        hinted = "uses touch" in str(conv[1].get("content"))
        return touch if hinted and not any(m.get("role") == "assistant" for m in conv) else submit

    config = RolloutConfig(k=2, backend="bwrap", batch_size=4)
    (probed,) = probe_tasks([task], ScriptedPolicy(reply), config, out_dir=tmp_path / "probe")
    if probed.errors:
        pytest.skip("the bwrap sandbox does not work here")
    assert probed.label == "frontier"
    figures = help_rollouts([task], ScriptedPolicy(reply), config, out_dir=tmp_path / "hinted")
    assert figures == {"tasks": 1, "episodes": 2, "passed": 2, "tasks_passed": 1}
    (conv,) = load_self_trajectories([tmp_path / "hinted"])
    assert conv.meta["hinted"] and conv.messages[1]["content"] == task.instruction
    assert [m["role"] for m in conv.messages][:3] == ["system", "user", "assistant"]
