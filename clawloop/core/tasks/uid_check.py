"""Does a Harbor verifier run something as another user?

bwrap's user namespace maps one uid (root inside), so a test that runs a process as another
user (`subprocess.run(..., user="nobody")`, `os.setuid`, `su`, `runuser`, `sudo -u`, `setpriv`,
`gosu`) gets EINVAL there and fails for a reason that is not the agent's (measured:
terminal-bench-tasks-finding-triage-task, whose tests check that the agent's program cannot read
the answer key as `nobody`). Such a task is skipped on bwrap with the place named; docker (root in
a container, which keeps CAP_SETUID) runs it, though a test.sh that
`chmod`s /tests fails there: docker mounts /tests read-only.
"""

from __future__ import annotations

import ast
import re

from clawloop.core.tasks.shell_words import command_words, shell_segments
from clawloop.core.tasks.task import FileSpec

SPAWN_CALLS = frozenset({"run", "Popen", "call", "check_call", "check_output", "create_subprocess_exec"})
"""subprocess (and asyncio) calls whose `user=`/`group=`/`extra_groups=` switch the child's ids."""
SWITCH_KWARGS = ("user", "group", "extra_groups")
SWITCH_CALLS = frozenset({"setuid", "seteuid", "setreuid", "setresuid", "setgid", "setegid", "setregid",
                          "setresgid", "setgroups", "initgroups"})
SWITCH_COMMANDS = frozenset({"su", "runuser", "setpriv", "gosu", "chpst", "setuidgid", "s6-setuidgid"})
_SUDO_USER = re.compile(r"(?:^|\s)sudo\s+(?:-\S+\s+)*-(?:u|g)\s*\S")


def python_switch(source: str, name: str) -> str | None:
    """Where the Python file `name` switches user ids, or None (unparsable files: None)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        called = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        if called in SWITCH_CALLS:
            return f"{name}:{node.lineno}: switches user ids ({called})"
        if called in SPAWN_CALLS:
            for kw in node.keywords:
                if kw.arg in SWITCH_KWARGS and not (isinstance(kw.value, ast.Constant) and kw.value.value is None):
                    return f"{name}:{node.lineno}: runs a process as another user ({kw.arg}=)"
    return None


def shell_switch(script: str, name: str) -> str | None:
    """Where the shell script `name` runs a command as another user, or None."""
    for seg in shell_segments(script):
        words = command_words(seg.text)  # leading `sudo` is dropped there, so sudo -u is matched on the text
        if (words and words[0].rsplit("/", 1)[-1] in SWITCH_COMMANDS) or _SUDO_USER.search(seg.text):
            return f"{name}: runs a command as another user ({seg.text.strip().splitlines()[0][:80]})"
    return None


def user_switch(tests: dict[str, FileSpec]) -> str | None:
    """Why the verifier files `tests` need more than one uid (first place found), or None."""
    for rel in sorted(tests):
        spec = tests[rel]
        if rel.endswith(".py"):
            why = python_switch(spec.data().decode(errors="replace"), f"tests/{rel}")
        elif rel.endswith(".sh"):
            why = shell_switch(spec.data().decode(errors="replace"), f"tests/{rel}")
        else:
            continue
        if why:
            return f"{why}; the sandbox maps one uid"
    return None
