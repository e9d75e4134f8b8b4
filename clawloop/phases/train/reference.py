"""Reference trajectories: each task's reference solution executed step by step in a sandbox.

Every solution step is one bash tool call, stepped through the episode exactly as a model's reply
would be (clawloop.core.agent.episode: same command timeout, same observation format), then a submit call;
the hidden verifier decides whether the episode is kept. The conversation is therefore in the
harness's own format with real observations, ready for SFT.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal, NamedTuple

from clawloop.core.agent.episode import Episode, Outcome
from clawloop.core.agent.harness import HarnessConfig
from clawloop.core.executor import ExecutorParams, run_all
from clawloop.core.tasks.answer import is_answer_task
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError
from clawloop.phases.train.data import Conversation, is_write
from clawloop.policy.types import Generation
from sandbox.base import SandboxConfig


@dataclass(frozen=True)
class ReferenceResult:
    """What happened when one task's reference solution was replayed."""

    task_id: str
    outcome: Outcome
    reason: str | None = None
    conversation: Conversation | None = None
    """The episode, only when the verifier passed it."""
    duration_s: float = 0.0
    node: str | None = None
    """The Ray node that replayed it (None on the local executor)."""


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """A reply as the model writes it: `<tool_call>` JSON (Qwen3 style)."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def scripted_reply(text: str) -> Generation:
    """A reply written here, not generated (no tokens counted): a replay's or GRPO's tool call."""
    return Generation(text=text, prompt_tokens=0, completion_tokens=0)


Shape = Literal["plain", "process"]
"""How a reference solution is replayed: `plain` (its steps, then submit) or `process` (inspect the
workspace first and check what the steps wrote before submitting, each with a one-line thought:
the inspect -> act -> check -> submit shape shell-core's tasks need, where plain replays and the
policy's own one-line passes teach "one command, then submit")."""

INSPECT = ("Let me look at the workspace before changing anything.", "ls -la")
CHECK_THOUGHT = "Let me check the result before I submit."
FIX_THOUGHT = "No such file here: my shell is not where the files are, so I cd there first."
ANSWER_THOUGHT = "The task asks for the answer itself: my last command prints it."
RESTATE = "The task: {}"
"""The thought before a replay's first act (`train.data.reference_thoughts: restate`): the instruction
in the agent's own words, so the command that follows is written right after what the task asks."""
RESTATE_CHARS = 240


def restatement(instruction: str, limit: int = RESTATE_CHARS) -> str:
    """The instruction on one line, as the thought before the first act: whole when it is short, else
    its sentences that fit `limit`, else its first `limit` characters cut at a word."""
    text = " ".join(instruction.split())
    if len(text) > limit:
        ends = [m.end() for m in re.finditer(r"[.?!:](?=\s)", text[:limit + 1])]
        text = text[:ends[-1]] if ends else text[:limit].rsplit(" ", 1)[0] + " ..."
    return RESTATE.format(text)
# `> out`, `>> out`, `tee [-a] out`, `-o out` / `--output=out`: paths a step writes. Quoted or
# variable paths are left alone (no check of a path we cannot name).
_WRITES = re.compile(r"(?:>>?|\btee(?:\s+-a)?|\s-o|--output=?)\s*([A-Za-z0-9_./-]+)")


def written_paths(steps: Sequence[str]) -> list[str]:
    """Files the solution's steps write by redirection, tee or an output flag, in order, once each."""
    out: list[str] = []
    for step in steps:
        for path in _WRITES.findall(step):
            if path not in out and not path.startswith("/dev/") and not path.startswith("&"):
                out.append(path)
    return out


Checks = Literal["look", "quiet", "none"]
"""What a process replay's check prints: `look` (the head of the written file, the listing of the moved
one), `quiet` (a test that prints nothing when the act worked and fails loudly when it did not:
`test -s out`, `test -e new`), or `none` (no check: look -> act -> submit). InterCode grades the last
command's output against the gold command's, which is empty after a change, and the trained policy
ended changes on `ls -la dir` or `head -n 20 -- file` (docs/experiments/2026-12-06-a-second-seed-end-to-end.md);
trained on quiet checks it ended answers on `test -s` too (docs/experiments/2026-12-06-quiet-checks.md)."""


def check_command(steps: Sequence[str], checks: Checks = "look") -> str | None:
    """What a careful agent runs after the last step: the head of each file the steps wrote (at most
    three); else a look at what the last step that changes something changed, by name (the moved
    file, the edited file, the archive's listing, the mode, the log); else the workspace's listing.
    A generic closing `ls -la` was 39 of 96 process references, and the trained policy ended on it
    even after it had printed an answer (docs/experiments/2026-12-05-answer-form-and-starting-elsewhere.md).
    With `checks` quiet, the same checks as tests that print nothing when they pass, and None (no
    check) where there is nothing named to test; with none, None."""
    if checks == "none":
        return None
    paths = written_paths(steps)[:3]
    if paths:
        each = "test -s {}" if checks == "quiet" else "head -n 20 -- {}"
        return " && ".join(each.format(shlex.quote(p)) for p in paths)
    for step in reversed(steps):
        check = named_check(step, checks)
        if check:
            return check
    return None if checks == "quiet" else "ls -la"


def _operands(args: Sequence[str]) -> list[str]:
    return [a for a in args if not a.startswith("-")]


def _check_of(argv: list[str], checks: Checks = "look") -> str | None:
    """The look at what one simple command changed, or (`checks` quiet) the test of it that prints
    nothing when the change is there and fails when it is not; None for a verb we do not know."""
    verb, args = argv[0], argv[1:]
    ops = _operands(args)
    q = shlex.quote
    quiet = checks == "quiet"
    if verb in ("mv", "cp") and len(ops) >= 2 or verb in ("mkdir", "touch") and ops:
        if quiet:
            return f"test -{'d' if verb == 'mkdir' else 'e'} {q(ops[-1])}"
        return f"ls -la -- {q(ops[-1])}"
    if verb in ("chmod", "chown", "chgrp", "ln") and len(ops) >= 2:
        symlink = verb == "ln" and any(a.startswith("-") and "s" in a for a in args)
        return f"test -{'L' if symlink else 'e'} {q(ops[-1])}" if quiet else f"ls -ld -- {q(ops[-1])}"
    if verb == "sed" and any(a.startswith("-i") for a in args) and len(ops) >= 2:
        return f"test -s {q(ops[-1])}" if quiet else f"head -n 20 -- {q(ops[-1])}"
    if verb == "gzip" and len(args) == len(ops) == 1:
        return f"test -s {q(ops[0] + '.gz')}" if quiet else f"ls -la -- {q(ops[0] + '.gz')}"
    flags = args[0].lstrip("-") if args else ""
    if verb == "tar" and len(args) > 1 and "c" in flags and flags.endswith("f"):
        return f"tar -t{'z' if 'z' in flags else ''}f {q(args[1])}" + (" > /dev/null" if quiet else "")
    if verb == "find" and args and args[-1] == "-delete":
        return shlex.join(argv[:-1])  # the selector again: it prints nothing once they are gone
    if verb == "git" and args:
        if args[0] == "init" and len(ops) == 2:
            return f"test -d {q(ops[1] + '/.git')}" if quiet else f"git -C {q(ops[1])} status --short --branch"
        if args[0] == "commit":
            return "git diff --cached --quiet" if quiet else "git log --oneline -n 3"
        if args[0] in ("add", "checkout", "restore", "rm", "mv", "reset") and not quiet:
            return "git status --short"
    return None


def _argv(command: str) -> list[str] | None:
    """The words of one simple command, or None for a pipeline, a redirection, a list or a substitution."""
    if "`" in command or "$(" in command:
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        argv = list(lexer)
    except ValueError:
        return None
    return None if any(t and set(t) <= set("();<>|&") for t in argv) else argv


def named_check(step: str, checks: Checks = "look") -> str | None:
    """A read-only look at what one solution step changed (`checks` quiet: a silent test of it), or
    None when the step is not a single command we know (a pipeline, a loop, an unknown verb). Keeps
    the step's leading `cd DIR &&`."""
    parts = step.split(" && ")
    if any(not p.startswith("cd ") for p in parts[:-1]):
        return None
    argv = _argv(parts[-1])
    check = _check_of(argv, checks) if argv else None
    return " && ".join([*parts[:-1], check]) if check else None


def data_dir(task: Task) -> str | None:
    """The folder that holds the task's files when its shell starts elsewhere (in `/`:
    register.start_elsewhere), else None (the shell starts beside them)."""
    dirs = {posixpath.dirname(p) for p in task.files}
    return posixpath.commonpath(sorted(dirs)) if dirs and task.workdir == "/" else None


class Call(NamedTuple):
    """One bash call of a replay: a thought line (may be empty), the command, and whether it is
    trained on (False: a planned mistake, in context but without loss)."""

    thought: str
    command: str
    trained: bool = True


# Commands that fail, changing nothing, when a file they name is not there: the relative-path mistake
# can be replayed with them safely (a `mkdir` or `tar -c` from `/` would succeed, somewhere else).
FAILS_WITHOUT_ITS_FILE = frozenset({"cat", "head", "tail", "wc", "sort", "uniq", "cut", "grep", "awk", "sed", "jq",
                                    "mv", "cp", "chmod", "gzip", "find", "diff", "nl", "tac"})
_PATTERN_FIRST = frozenset({"grep", "awk", "sed", "jq"})


def relative_mistake(step: str) -> str | None:
    """The step of a task whose shell starts away from its files, as an agent that forgot where its
    shell starts would run it: without its leading `cd DIR &&`, its relative names resolved in `/`
    (InterCode's trained policy did exactly this:
    docs/experiments/2026-12-05-answer-form-and-starting-elsewhere.md). None unless it is one simple
    command of FAILS_WITHOUT_ITS_FILE that names a relative path, so it fails without changing anything."""
    cd, sep, bare = step.partition(" && ")
    argv = _argv(bare) if sep and cd.startswith("cd ") else None
    if not argv or argv[0] not in FAILS_WITHOUT_ITS_FILE:
        return None
    ops = _operands(argv[1:])[1 if argv[0] in _PATTERN_FIRST else 0:]
    return bare if any(not o.startswith("/") for o in ops) else None


def is_preview(look: str, act: str) -> bool:
    """Whether solution step `look` only shows what the later step `act` then changes: `look` writes
    nothing and `act` is its first command (before any pipe) with an action added, as `find d -empty`
    (or `find d -mtime +7 | sort`) before `find d -empty -delete`."""
    head = look.split("|", 1)[0].strip()
    return bool(head) and not is_write(look) and is_write(act) and act.startswith(head + " ")


def drop_previews(steps: Sequence[str]) -> list[str]:
    """The steps without those that preview a later step (`is_preview`). The process replay already
    looks first and checks last; a preview in between ends on the listing an answer task submits
    after, and the trained policy listed and submitted on delete tasks (`find peach -type f -empty`
    three times, never `-delete`; docs/experiments/2026-12-05-find-breadth-and-the-suite-guard.md)."""
    return [s for i, s in enumerate(steps) if not any(is_preview(s, later) for later in steps[i + 1:])]


def plan_calls(steps: Sequence[str], shape: Shape, max_turns: int, *, answer: bool = False,
               data: str | None = None, mistake: bool = False, previews: bool = True,
               instruction: str | None = None, checks: Checks = "look") -> list[Call]:
    """The bash calls of the replay. The process shape needs two more turns than the plain one (and
    the submit one): a solution too long for `max_turns` is replayed plain. An answer task
    (clawloop.core.tasks.answer) is graded on its last command's output, so its replay ends on the step
    that prints the answer: look -> act -> submit. With `data` (the shell starts away from the task's
    files), the look and the check are of that folder; with `mistake` too, the first step is first
    run where the shell starts (relative_mistake: untrained, its real error follows) and then fixed,
    when that is safe and one more turn fits. `previews` False drops the steps that only preview a
    later one (`drop_previews`) from a process replay. With `instruction`, the first act's thought
    restates it (`restatement`), ahead of the answer's thought when that act is also the last; with a
    planned mistake the first act is the mistaken one, so the restatement is in context but outside
    the loss. `checks` picks the check's kind (`check_command`); a replay with no check (`none`, or
    `quiet` with nothing named to test) ends look -> act -> submit."""
    if shape == "plain" or len(steps) + 3 > max_turns:
        return [Call("", step) for step in steps]
    if not previews and not answer:
        steps = drop_previews(steps)
    plain = [Call("", step) for step in steps]
    where = f"cd {shlex.quote(data)} && " if data else ""
    first = Call(INSPECT[0], f"ls -la {shlex.quote(data)}" if data else INSPECT[1])
    wrong = relative_mistake(steps[0]) if data and mistake and len(steps) + 4 <= max_turns else None
    if wrong:
        plain = [Call("", wrong, trained=False), Call(FIX_THOUGHT, steps[0]), *plain[1:]]
    if answer:  # before the restatement: a one-step answer keeps both thoughts
        plain[-1] = plain[-1]._replace(thought=plain[-1].thought or ANSWER_THOUGHT)
    if instruction:
        plain[0] = plain[0]._replace(thought=" ".join(filter(None, [restatement(instruction), plain[0].thought])))
    if answer:
        return [first, *plain]
    check = check_command(steps, checks)
    if check is None:
        return [first, *plain]
    return [first, *plain, Call(CHECK_THOUGHT, check if check.startswith("cd ") else where + check)]


def takes_mistake(task_id: str, share: float) -> bool:
    """Whether a task's replay plans the mistake: a stable draw from its id, `share` of tasks."""
    return share > 0 and int(hashlib.sha256(f"mistake/{task_id}".encode()).hexdigest()[:8], 16) < share * 2**32


def replay(episode: Episode, shape: Shape = "plain", mistakes: float = 0.0, previews: bool = True,
           restate: bool = False, checks: Checks = "look") -> None:
    """Drive a begun episode's turns with its task's solution steps (`shape`, a planned mistake for
    `mistakes` of the tasks that allow one, the instruction restated before the first act when
    `restate`), then submit. A turn planned as a mistake is marked
    `"train": false` (the chat templates keep it out of the loss); if it did not fail, the replay
    stops there without submitting (the caller skips it)."""
    task, state = episode.task, episode.state
    if task.solution is None or state is None:
        raise ClawloopError(f"task {task.id}: has no reference solution or no harness to replay it in")
    for call in plan_calls(task.solution.steps, shape, state.max_turns, answer=is_answer_task(task),
                           data=data_dir(task), mistake=takes_mistake(task.id, mistakes), previews=previews,
                           instruction=task.instruction if restate else None, checks=checks):
        text = call_text("bash", {"command": call.command})
        at = len(state.messages)
        if episode.step(scripted_reply(f"{call.thought}\n{text}" if call.thought else text)) is None:
            break
        if not call.trained:
            state.messages[at] = {**state.messages[at], "train": False}
            if state.steps[-1].exit_code == 0:
                return
    if not state.done:
        episode.step(scripted_reply(call_text("submit", {})))


def reference_episode(task: Task, backend: str = "bwrap", sandbox_config: SandboxConfig | None = None,
                      harness_config: HarnessConfig | None = None, shape: Shape = "plain",
                      mistakes: float = 0.0, previews: bool = True, restate: bool = False,
                      checks: Checks = "look") -> ReferenceResult:
    """One episode (clawloop.core.agent.episode) replaying the task's solution. Never raises for task trouble."""
    t0 = time.monotonic()

    def result(outcome: Outcome, reason: str | None = None, conv: Conversation | None = None) -> ReferenceResult:
        return ReferenceResult(task.id, outcome, reason, conv, round(time.monotonic() - t0, 3))

    if task.solution is None or not task.solution.steps:
        return result("skipped", "no reference solution")
    episode = Episode(task, backend, sandbox_config, harness_config or HarnessConfig())
    if episode.begin():
        replay(episode, shape, mistakes, previews, restate, checks)
        assert episode.state is not None
        if episode.state.termination not in ("submit", "error"):
            episode.close()
            return result("skipped", f"replay ended with {episode.state.termination} before submit "
                                     f"({len(task.solution.steps)} steps)")
    if episode.conclude() != "passed":
        return result(episode.outcome or "error", episode.reason or f"reward {episode.reward}")
    assert episode.state is not None
    conv = Conversation(task.id, episode.state.messages, "reference",
                        {"skill": task.skill, "level": task.level, "steps": len(task.solution.steps), "shape": shape})
    return result("passed", None, conv)


def reference_trajectories(tasks: Sequence[Task], backend: str = "bwrap", *,
                           sandbox_config: SandboxConfig | None = None,
                           harness_config: HarnessConfig | None = None, workers: int = 4,
                           executor: ExecutorParams | str | None = None, shape: Shape = "plain",
                           mistakes: float = 0.0, previews: bool = True,
                           restate: bool = False,
                           checks: Checks = "look") -> tuple[list[Conversation], list[ReferenceResult]]:
    """Replay every task's reference solution, `workers` at a time on the local executor (or as
    Ray tasks: clawloop.core.executor); returns (kept conversations, all results), in task order."""
    one = partial(reference_episode, backend=backend, sandbox_config=sandbox_config, harness_config=harness_config,
                  shape=shape, mistakes=mistakes, previews=previews, restate=restate, checks=checks)
    results = [replace(r.value, node=r.node) for r in run_all(one, list(tasks), jobs=workers, executor=executor)]
    kept = [r.conversation for r in results if r.conversation is not None]
    return kept, results
