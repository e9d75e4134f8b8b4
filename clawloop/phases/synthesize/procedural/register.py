"""The conversational register: a templated instruction rephrased the way people write requests.

Generators phrase tasks tersely ("Delete old.log."), with bare or double-quoted relative names.
People writing to a shell agent mostly do not: they name files as absolute paths in backticks
(`/workspace/old.log`), and wrap the request in a polite frame ("Could you ...", "Thanks!").
A small model trained on one register alone copies names only from that register (measured:
SmolLM2-135M after SFT on terse tasks wrote commands on unrelated names for backticked paths),
so a share of every pool is rewritten here. Only the surface changes: the same files, verifier
and solution (relative names still work, the agent's cwd is the workdir).
"""

from __future__ import annotations

import random
import re
import textwrap

from clawloop.core.tasks.task import Task

_QUOTED = re.compile(r'"([^"\n`]+)"|\'([^\'\n`]+)\'')
_EXTENSIONS = ("txt|log|csv|tsv|json|jsonl|md|sh|py|conf|cfg|ini|toml|yaml|yml|xml|html|tar|gz|tgz|zip|"
               "bz2|xz|old|bak|tmp|out|err|dat|pdf|jpg|png|env|list|sql|js|c|h|lock|rst|diff|patch")
_BARE_FILE = re.compile(r"(?<![\w/.`'\"-])((?:[\w-]+/)*[\w-]+(?:\.(?:" + _EXTENSIONS + r"))+)(?![\w/`'\"-])",
                        re.IGNORECASE)
_OPENERS = ("Please {v}", "Could you {v}", "Can you {v}", "I need you to {v}", "Quick task: {V}",
            "Hey, {v}", "When you get a chance, {v}", "{V}")
_PLAIN_OPENERS = ("Quick task: {V}", "Hi! {V}", "{V}")
"""For instructions that do not start with an imperative ("Which lines ...", "There is ...")."""
_VERBS = frozenset(["add", "append", "archive", "bundle", "calculate", "change", "clean", "collect", "combine", "commit", "compress", "compute", "convert", "copy", "count", "create", "cut", "delete", "determine", "drop", "duplicate", "edit", "empty", "extract", "filter", "find", "fix", "gather", "get", "give", "grant", "keep", "link", "list", "lock", "look", "make", "merge", "move", "overwrite", "pack", "pick", "point", "print", "provide", "pull", "put", "remove", "rename", "replace", "report", "restore", "restrict", "run", "save", "script", "select", "set", "show", "sort", "split", "store", "strip", "take", "tidy", "turn", "uncompress", "undo", "unpack", "update", "work", "write"])
_CLOSERS = ("", "", " Thanks!", " Thank you.", " Thanks in advance.")


def _path(name: str, workdir: str, absolute: bool) -> str:
    if absolute and not name.startswith("/"):
        name = f"{workdir.rstrip('/')}/{name}"
    return f"`{name}`"


def restyle(task: Task, rng: random.Random) -> Task:
    """`task` with its instruction in the conversational register (names in backticks, absolute
    paths half the time, a polite frame); unchanged when it carries a literal block or backticks."""
    text = task.instruction
    if "`" in text or "\n" in text.strip():
        return task
    absolute = rng.random() < 0.6

    def quoted(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        looks_like_path = "." in name or "/" in name or name in task.files
        return _path(name, task.workdir, absolute) if looks_like_path else m.group(0)

    def bare(m: re.Match[str]) -> str:
        return _path(m.group(1), task.workdir, absolute)

    text = _BARE_FILE.sub(bare, _QUOTED.sub(quoted, text))
    body = text.strip()
    verb_first = body.split(" ", 1)[0].lower() in _VERBS and body[:1].isupper()
    openers = _OPENERS if verb_first else _PLAIN_OPENERS
    opener = openers[rng.randrange(len(openers))]
    if "{v}" in opener:
        body = opener.format(v=body[0].lower() + body[1:])
        if body.endswith(".") and opener.startswith(("Could", "Can")):
            body = body[:-1] + "?"
    else:
        body = opener.format(V=body)
    body += _CLOSERS[rng.randrange(len(_CLOSERS))]
    return task.model_copy(update={"instruction": body})


ELSEWHERE_NOTES = ("The files are in {d}; your shell starts in {wd}.", "Everything you need is under {d}.",
                   "(The working files live in {d}.)", "Note: the data is in {d}, not where your shell starts.",
                   "You start in {wd}; the task's files are in {d}.", "Look in {d} for the files.")


def start_elsewhere(task: Task, rng: random.Random, start: str = "/") -> Task:
    """`task` with the agent's shell starting in `start` instead of the folder that holds its files,
    as InterCode-Bash's agent starts in `/` with the data under /testbed or /system. A policy that
    only ever started beside its files learned to name them relative to where it stands (measured:
    after one iteration, InterCode's episodes ran `ls -la` at `/` and then `grep ... *.php` there).
    The instruction says where the files are (a task about the shell's own directory is left
    alone); each reference step first changes into that folder,
    so the reference stays correct from any start. Unchanged for a task without files, with
    another workdir, or whose instruction carries a literal block."""
    if task.workdir != "/workspace" or not task.files or task.solution is None or "\n" in task.instruction.strip():
        return task
    if any(re.search(r"\bpwd\b", s) for s in task.solution.steps):  # asks where the shell is: that moved
        return task
    d = task.workdir
    note = ELSEWHERE_NOTES[rng.randrange(len(ELSEWHERE_NOTES))].format(d=d, wd=start)
    steps = [f"cd {d} && {s}" for s in task.solution.steps]
    return task.model_copy(update={"instruction": f"{task.instruction} {note}", "workdir": start,
                                   "solution": task.solution.model_copy(update={"steps": steps}),
                                   "tags": (*task.tags, "elsewhere")})


DETAIL_CONTEXTS = (
    "I'm cleaning up this workspace before I hand it over to a colleague.",
    "We're getting the files ready for tomorrow's release.",
    "This is one of the chores on today's maintenance list.",
    "A teammate asked me for this and I'm short on time.",
    "I'm putting together a quick summary for the team.",
    "Our nightly job expects this to be done before it runs.",
    "I inherited this folder from someone who has left, and I'm sorting it out.",
    "Some context: a script further down the line depends on this.",
)
DETAIL_ASIDES = ("", "The folder isn't under version control, so there is no undo.",
                 "Take a look at the files first if you're not sure what's in there.",
                 "Use the usual command-line tools; nothing fancy is installed.",
                 "The file names are exactly as written here.", "It's a small folder, nothing is huge.")
DETAIL_CLOSERS = ("", "Please leave everything else as it is.", "Nothing else in there needs to change.",
                  "I'll look at the result afterwards.", "Let me know if anything looks off.")
_LITERAL = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"|(?<!\w)'[^'\n]*'(?!\w)")
_GLUE = "\x00"
DETAIL_WIDTHS = (80, 88, 96, 100)
"""Columns shell-core's instruction.md files are wrapped at (most at ~100)."""


def in_detail(task: Task, rng: random.Random) -> Task:
    """`task` with its instruction written the way shell-core's are: a sentence of context first, an
    aside and a closing remark (either may be left out), the whole hard-wrapped over several lines.
    Generated instructions are one short line while 52 of shell-core's 72 are over 240 characters on
    3-5 lines; a policy trained on short lines only restated those in full before its first call
    (measured: 18 of 71 such replies ran out of tokens before the call,
    docs/experiments/2026-12-05-restating-the-task.md). Only the surface changes, as in `restyle`;
    unchanged when the instruction carries a literal block."""
    if "\n" in task.instruction.strip():
        return task
    parts = [DETAIL_CONTEXTS[rng.randrange(len(DETAIL_CONTEXTS))], task.instruction.strip(),
             DETAIL_ASIDES[rng.randrange(len(DETAIL_ASIDES))], DETAIL_CLOSERS[rng.randrange(len(DETAIL_CLOSERS))]]
    width = DETAIL_WIDTHS[rng.randrange(len(DETAIL_WIDTHS))]
    # a line break inside a literal (`a b`, "a b") would change what the task asks for: keep them whole
    glued = _LITERAL.sub(lambda m: m.group(0).replace(" ", _GLUE), " ".join(p for p in parts if p))
    text = textwrap.fill(glued, width=width, break_long_words=False, break_on_hyphens=False).replace(_GLUE, " ")
    return task.model_copy(update={"instruction": text, "tags": (*task.tags, "detailed")})
