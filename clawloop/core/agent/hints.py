"""Help for a rollout, cut before training: "generate with help, train without it".

On a task the policy failed, a rollout whose instruction ends with a hint drawn from the task's
reference solution (the programs it runs and their options, never an argument, a path, a
pattern or the command itself) may pass; SFT then trains on that episode with the hint cut from
the instruction (`strip_hint`), so the weights learn to solve the plain task in the policy's own
words (STaR's rationalization, context distillation). The validate stage runs such rollouts
(params.yaml `validation.hinted`), training reads them (clawloop.phases.train.data).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from clawloop.core.tasks.task import Task

HINT_PREFIX = "Hint: a solution uses "
"""How the hint line starts; `strip_hint` cuts the instruction's last paragraph when it starts so."""

_OPERATORS = frozenset("|&;()")
"""The characters of shlex's operator tokens that end a simple command (`|`, `&&`, `;;`, `(` ...;
a redirection's `<` or `>` stays a word of its command)."""
_KEYWORDS = frozenset({"do", "then", "else", "elif", "!", "{", "}", "time"})
_COMPOUND = frozenset({"for", "while", "until", "if", "done", "fi", "case", "esac", "in", "select", "function"})
_SKIPPED = frozenset({"cd", "true", ":"})
_SUBCOMMANDS = frozenset({"git", "docker", "pip", "apt", "apt-get", "systemctl", "ip"})
_OPTION = re.compile(r"^(--?[A-Za-z][A-Za-z-]*)")
"""An option's name: `-d,` -> `-d`, `-f2` -> `-f`, `--format=%s` -> `--format` (values are the answer's)."""


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a shell command line, as words (quotes respected; a heredoc's body,
    which is data, left out)."""
    if "<<" in command:
        command = command.split("\n", 1)[0]
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    out: list[list[str]] = [[]]
    try:
        for token in lexer:
            if set(token) <= _OPERATORS:
                out.append([])
            else:
                out[-1].append(token)
    except ValueError:  # an unbalanced quote: what was read so far
        pass
    return [words for words in out if words]


def tools_and_options(commands: list[str]) -> list[tuple[str, list[str]]]:
    """The programs the commands run, in order of first use, each with its options (`-x`, `--long`,
    find's predicates; their values, arguments and paths left out): what a hint may say."""
    found: dict[str, list[str]] = {}
    for command in commands:
        for words in _segments(command):
            while words and (words[0] in _KEYWORDS or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0])):
                words = words[1:]
            if not words or words[0] in _COMPOUND or not re.match(r"^[A-Za-z][A-Za-z0-9_.+-]*$", words[0]):
                continue  # a loop header, a redirection, a variable, a local script (./run.sh)
            tool, rest = words[0], words[1:]
            if tool in _SKIPPED:
                continue
            if tool in _SUBCOMMANDS and rest and not rest[0].startswith("-"):
                tool, rest = f"{tool} {rest[0]}", rest[1:]
            options = found.setdefault(tool, [])
            for w in rest:
                m = _OPTION.match(w)
                if m and m.group(1) not in options:
                    options.append(m.group(1))
    return list(found.items())


def hint_for(task: Task) -> str | None:
    """The hint line of a task with a reference solution, or None (no solution, or nothing to say)."""
    if task.solution is None:
        return None
    parts = [f"{tool} ({', '.join(opts)})" if opts else tool for tool, opts in tools_and_options(task.solution.steps)]
    if not parts:
        return None
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{HINT_PREFIX}{listed}."


def with_hint(task: Task) -> Task | None:
    """The task with its hint as the instruction's last paragraph (a new task id), or None."""
    hint = hint_for(task)
    return None if hint is None else task.model_copy(update={"instruction": f"{task.instruction}\n\n{hint}"})


def strip_hint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation with the hint paragraph cut from its first user turn (others untouched)."""
    for i, m in enumerate(messages):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if not isinstance(content, str):
            return messages
        head, sep, tail = content.rpartition("\n\n")
        if sep and tail.startswith(HINT_PREFIX) and "\n" not in tail:
            return [*messages[:i], {**m, "content": head}, *messages[i + 1:]]
        return messages
    return messages
