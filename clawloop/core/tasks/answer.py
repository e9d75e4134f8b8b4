"""Answer tasks: the agent prints the answer, and the output of its last command is graded.

Most synthesized tasks ask for a file ("write the count to out.txt"); people and InterCode-Bash
mostly ask a question ("how many lines mention ERROR?") and read what the agent's last command
printed. A policy trained on files alone learns to write answers into files and to end on a check
(measured: InterCode-Bash 9/50 -> 0/50 after two iterations), so a share of every pool asks for
the answer on the terminal instead (clawloop.phases.synthesize.builder makes them).

Grading keeps the episode protocol (the verifier runs after the agent, in a clean world): the host
takes the agent's last observation from its own record of the episode (`TaskEnvironment.steps`: the
output of the last command the agent ran; the last tool turn of the transcript when there are no
steps; "" when it ran nothing) and writes it into the verifier's files as `/tests/answer.txt`,
where the task's checks compare it (a procedural task's: `cat /tests/answer.txt` must print the
answer, clawloop.phases.synthesize.builder). The agent can make it
whatever it can print, nothing more: /tests is mounted fresh for the verifier only.

A task is an answer task when its loader (the builder) wrote the `answer` record into
`task.metadata`; a Harbor directory cannot carry it (Harbor's harness has no last observation), so
export refuses such a task and import refuses a smuggled record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from clawloop.core.tasks.task import FileSpec, Task

KEY = "answer"
"""`Task.metadata` key of the record: `{"from": "last_output"}`."""
RECORD = {"from": "last_output"}
FILE = "answer.txt"
"""The verifier's file (under /tests) that holds the agent's last observation."""
TIMED_OUT = "Command timed out"
"""The observation of a command that timed out (InterCode's BashEnv.exec_action)."""

_EXIT_LINE = re.compile(r"\n?\[exit code -?\d+[^\]]*\]\s*$")


def is_answer_task(task: Task) -> bool:
    """Whether `task` is graded on the agent's last output."""
    return task.metadata.get(KEY) == RECORD


def observation(result: Any) -> str:
    """A command's observation: its output, or "Command timed out"."""
    return TIMED_OUT if result.timed_out else str(result.output)


def last_output(messages: Sequence[dict[str, Any]] | None, steps: Sequence[tuple[str, Any]],
                default: str = "") -> str:
    """The agent's answer: the output of its last command (the host's record); with no steps, the
    last tool turn of the transcript (its exit-code line cut); with neither, `default` ("": an
    agent that ran nothing printed nothing). InterCode's grading reads the same observation."""
    if steps:
        return observation(steps[-1][1])
    for m in reversed(list(messages or [])):
        if m.get("role") == "tool" and isinstance(m.get("content"), str):
            return _EXIT_LINE.sub("", m["content"])
    return default


def with_answer(task: Task, answer: str) -> Task:
    """`task` whose verifier files carry `answer` as /tests/answer.txt (replacing any file of
    that name the task brought)."""
    files = {**task.verifier.files, FILE: FileSpec(content=answer)}
    return task.model_copy(update={"verifier": task.verifier.model_copy(update={"files": files})})
