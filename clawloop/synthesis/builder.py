"""TaskBuilder: what every skill generator uses to assemble a Task with a known solution.

A generator draws names and contents with the task's rng, places starting files, phrases the
instruction from templates, records the reference steps (one shell command each) and the
checks of the hidden verifier. `build()` turns that into a frozen Task. The generic knobs
(loud broken start, more steps) are applied here so every family gets them the same way.
"""

from __future__ import annotations

import posixpath
import random
import re
import shlex
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import Any

import orjson

from clawloop.synthesis import words
from clawloop.synthesis.knobs import Knobs
from clawloop.synthesis.templates import phrase
from clawloop.tasks.task import FileSpec, Limits, Provenance, Solution, Task, Verifier

W = "/workspace"

# The verifier entry: the same for every procedural task; the checks live in spec.json.
TEST_SH = """#!/bin/bash
# Procedural task verifier: reward 1 when every check in spec.json passes.
mkdir -p /logs/verifier
if python3 /tests/check.py /tests/spec.json; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""

_SAFE = re.compile(r"^[A-Za-z0-9._/+-]+$")


@cache
def _checker_source() -> str:
    """checker.py as shipped: its long module docstring (for readers of this repo) left out,
    since every task of a pool carries a copy."""
    src = resources.files("clawloop.synthesis").joinpath("checker.py").read_text("utf-8")
    if src.startswith('"""'):
        src = src[src.index('"""', 3) + 3:].lstrip("\n")
    return "# clawloop procedural-task checker: python3 check.py spec.json (exit 0 = pass)\n" + src


def q(path: str) -> str:
    """Shell-quote a path for a solution step (plain names stay bare, like a person types)."""
    return shlex.quote(path)


def show(path: str) -> str:
    """A path as an instruction mentions it: bare when plain, in double quotes otherwise."""
    return path if _SAFE.match(path) and not path.startswith("-") else f'"{path}"'


def lines_text(lines: list[str]) -> str:
    """Lines joined with a final newline (empty list: empty text)."""
    return "".join(f"{line}\n" for line in lines)


class TaskBuilder:
    """Accumulates one task; see the module docstring."""

    def __init__(self, family: str, version: int, level: int, rng: random.Random, knobs: Knobs):
        self.family, self.version, self.level, self.rng, self.knobs = family, version, level, rng, knobs
        self.files: dict[str, FileSpec] = {}
        self.setup: list[str] = []
        self.steps: list[str] = []
        self.checks: list[dict[str, Any]] = []
        self.sentences: list[str] = []
        self.env: dict[str, str] = {"LC_ALL": "C"}
        self.tags: list[str] = [f"level{level}"]
        self.used: set[str] = set()
        self._primary: tuple[str, str, str] | None = None
        self._out_dir: str | None = None

    # ---- names -------------------------------------------------------------------------
    def awkward(self, from_level: int = 3, p: float = 0.5) -> bool:
        """Whether this task's key names are awkward: forced by the knob, else likely from a level."""
        if self.knobs.names_with_spaces:
            return True
        return self.level >= from_level and self.rng.random() < p

    def name(self, ext: str = "txt", *, awkward: bool = False, stem: str | None = None,
             folder: str = "") -> str:
        """A fresh relative path `folder/stem.ext`, unique within the task."""
        for _ in range(100):
            s = stem or (words.awkward_stem(self.rng) if awkward else words.plain_stem(self.rng))
            base = f"{s}.{ext}" if ext else s
            rel = posixpath.join(folder, base) if folder else base
            if rel.lower() not in self.used:
                self.used.add(rel.lower())
                return rel
            stem = None
        raise RuntimeError("could not draw a fresh name")

    def dirname(self, *, awkward: bool = False, folder: str = "") -> str:
        """A fresh directory name (no extension)."""
        if awkward:
            return self.name("", awkward=True, folder=folder)
        kinds = ("nouns", "cities", "fruits", "services")
        for _ in range(100):
            s = words.pick(self.rng, kinds[self.rng.randrange(len(kinds))])
            rel = posixpath.join(folder, s) if folder else s
            if rel.lower() not in self.used:
                self.used.add(rel.lower())
                return rel
        return self.name("", folder=folder)

    def reserve(self, rel: str) -> str:
        """Mark a fixed name (e.g. "backup") as used so no drawn name collides with it."""
        self.used.add(rel.lower())
        return rel

    # ---- starting state ----------------------------------------------------------------
    def file(self, rel: str, content: str | bytes, mode: int = 0o644) -> str:
        """Place a starting file at workspace-relative `rel`; returns `rel`."""
        self.used.add(rel.lower())
        self.files[f"{W}/{rel}"] = FileSpec.of(content, mode=mode)
        return rel

    def run_setup(self, cmd: str) -> None:
        """A setup command (run from /workspace before the agent starts)."""
        self.setup.append(f"cd {W} && {cmd}")

    def distractor_count(self, base: int) -> int:
        """How many distractors to place: the level's base plus the knob's extra."""
        return base + self.knobs.distractors

    # ---- outputs and checks --------------------------------------------------------------
    def output(self, name: str) -> str:
        """Where the task's result goes. With loud_broken_start it sits in a directory that does
        not exist yet (the reference solution creates it first)."""
        if not self.knobs.loud_broken_start:
            return name
        if self._out_dir is None:
            self._out_dir = self.dirname()
        return posixpath.join(self._out_dir, name)

    def primary(self, rel: str, want: str, norm: str = "text") -> None:
        """Check the main output file and remember it for a follow-up step."""
        self.expect_file(rel, want, norm)
        self._primary = (rel, want, norm)

    def expect_file(self, rel: str, want: str, norm: str = "text") -> None:
        self.checks.append({"t": "file", "path": f"{W}/{rel}", "want": want, "norm": norm})

    def unchanged(self, *rels: str) -> None:
        """Each starting file of `rels` must still be there with its starting content."""
        for rel in rels:
            self.expect_file(rel, self.files[f"{W}/{rel}"].data().decode("utf-8"), "exact")

    def expect_absent(self, *rels: str) -> None:
        """None of `rels` may exist at the end."""
        for rel in rels:
            self.checks.append({"t": "absent", "path": f"{W}/{rel}"})

    def expect_dir(self, rel: str) -> None:
        self.checks.append({"t": "dir", "path": f"{W}/{rel}"})

    def expect_mode(self, rel: str, mode: int) -> None:
        self.checks.append({"t": "mode", "path": f"{W}/{rel}", "mode": mode})

    def expect_link(self, rel: str, to: str) -> None:
        self.checks.append({"t": "link", "path": f"{W}/{rel}", "to": f"{W}/{to}"})

    def expect_tree(self, rel: str, files: dict[str, str | None], norm: str = "exact") -> None:
        self.checks.append({"t": "tree", "path": f"{W}/{rel}", "files": files, "norm": norm})

    def expect_archive(self, rel: str, files: dict[str, str | None], norm: str = "exact") -> None:
        self.checks.append({"t": "archive", "path": f"{W}/{rel}", "files": files, "norm": norm})

    def expect_gz(self, rel: str, want: str) -> None:
        self.checks.append({"t": "gz", "path": f"{W}/{rel}", "want": want, "norm": "exact"})

    def expect_run(self, cmd: str, want: str | None = None, *, code: int | None = 0,
                   norm: str = "text", cwd: str = W) -> None:
        c: dict[str, Any] = {"t": "run", "cmd": cmd, "cwd": cwd, "norm": norm}
        if want is not None:
            c["want"] = want
        if code is not None:
            c["code"] = code
        self.checks.append(c)

    # ---- instruction and solution ----------------------------------------------------------
    def say(self, intent: str, /, **slots: object) -> None:
        """Append one phrasing of the family's `intent` to the instruction."""
        self.sentences.append(phrase(self.family, intent, self.rng, **slots))

    def say_common(self, intent: str, /, **slots: object) -> None:
        self.sentences.append(phrase("_common", intent, self.rng, **slots))

    def step(self, cmd: str) -> None:
        """One reference command (one tool call)."""
        self.steps.append(cmd)

    def tag(self, *tags: str) -> None:
        self.tags.extend(tags)

    # ---- generic knobs -------------------------------------------------------------------
    def _follow_up(self) -> None:
        """more_steps: one more real step after the main task."""
        if self._primary is not None and self.rng.random() < 0.6:
            rel, want, norm = self._primary
            bdir = self.dirname()
            self.say_common("backup_copy", out=show(rel), dir=show(bdir))
            self.step(f"mkdir -p {q(bdir)}")
            self.step(f"cp {q(rel)} {q(bdir)}/")
            self.expect_file(posixpath.join(bdir, posixpath.basename(rel)), want, norm)
            return
        journal = self.name("log", stem=self.rng.choice(["journal", "worklog", "diary", "changelog"]))
        old = [f"{words.pick(self.rng, 'people')}: {words.sentence(self.rng, 3)}" for _ in range(2)]
        self.file(journal, lines_text(old))
        line = f"done {words.pick(self.rng, 'nouns')} {self.rng.randrange(10, 999)}"
        self.say_common("journal_line", journal=show(journal), line=line)
        self.step(f"echo {q(line)} >> {q(journal)}")
        self.expect_file(journal, lines_text([*old, line]), "text")

    def build(self) -> Task:
        """The finished task (solution known by construction)."""
        if self.knobs.more_steps:
            self._follow_up()
        steps = list(self.steps)
        if self._out_dir is not None:
            steps.insert(0, f"mkdir -p {q(self._out_dir)}")
        # orjson: the stdlib encoder with indent is pure Python and was most of the build time
        spec = orjson.dumps({"checks": self.checks}, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode()
        verifier = Verifier(files={
            "test.sh": FileSpec(content=TEST_SH, mode=0o755),
            "check.py": FileSpec(content=_checker_source()),
            "spec.json": FileSpec(content=spec + "\n"),
        })
        tags = [*self.tags, *(f"knob:{k}" for k in self.knobs.active())]
        return Task(
            instruction=" ".join(self.sentences),
            files=dict(sorted(self.files.items())),
            setup=self.setup,
            env=self.env,
            verifier=verifier,
            solution=Solution(steps=steps),
            skill=self.family,
            level=self.level,
            tags=tuple(tags),
            source="procedural",
            limits=Limits(max_turns=max(8, 2 * len(steps) + 4)),
            provenance=Provenance(routine="procedural", generator=f"{self.family}@{self.version}"),
        )


Generate = Callable[[int, random.Random, Knobs], Task]
"""A skill family's `generate(level, rng, knobs) -> Task`."""


def level_generator(name: str, version: int, levels: Sequence[Callable[[TaskBuilder], None]]) -> Generate:
    """The `generate` of a family whose levels each fill a fresh TaskBuilder: `levels[0]` is
    level 1. A level outside them is a KeyError (callers check levels: skills.check_level)."""
    by_level = dict(enumerate(levels, start=1))

    def generate(level: int, rng: random.Random, knobs: Knobs) -> Task:
        b = TaskBuilder(name, version, level, rng, knobs)
        by_level[level](b)
        return b.build()

    return generate
