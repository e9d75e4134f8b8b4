"""TaskBuilder: what every skill generator uses to assemble a Task with a known solution.

A generator draws names and contents with the task's rng, places starting files, phrases the
instruction from templates, records the reference steps (one shell command each) and the
checks of the hidden verifier. `build()` turns that into a frozen Task. The generic knobs
(loud broken start, more steps) are applied here so every family gets them the same way.

**Answer form.** Given an `answer_rng`, a task whose result is one output file written by its last
step, phrased by an intent that has `answer:<intent>` templates, is built to ask for the answer on
the terminal instead: the answer phrasing, the last step without its `> out`, the output check
turned into a check of the agent's last observation (clawloop.core.tasks.answer) and the file
required absent (an agent that also writes it made a file nobody asked for). Every other task, and
every draw of the main rng, stays as without it: pools and synth-heldout do not move.
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

from clawloop.config.knobs import Knobs
from clawloop.core.tasks import answer
from clawloop.core.tasks.task import FileSpec, Limits, Provenance, Solution, Task, Verifier
from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.templates import phrase, templates

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
ANSWER_PREFIX = "answer:"
"""Template key prefix of an intent's answer-form phrasings."""
ANSWER_PATH = f"/tests/{answer.FILE}"
"""Where the verifier finds the agent's last observation (clawloop.core.tasks.answer)."""
ANSWER_NORMS = ("text", "strip", "lines")
"""Output checks an answer can stand for (a printed answer is text)."""
ANSWER_NOTES = ("", "", " The output of your last command is taken as the answer.",
                " Do not create any file: your final command's output is read as the answer.",
                " Just print it; no file is needed.")


@cache
def _checker_source() -> str:
    """checker.py as shipped: its long module docstring (for readers of this repo) left out,
    since every task of a pool carries a copy."""
    src = resources.files("clawloop.phases.synthesize").joinpath("checker.py").read_text("utf-8")
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

    def __init__(self, family: str, version: int, level: int, rng: random.Random, knobs: Knobs,
                 answer_rng: random.Random | None = None):
        self.family, self.version, self.level, self.rng, self.knobs = family, version, level, rng, knobs
        self.answer_rng = answer_rng
        """Set: build the answer form where the task allows it (module doc), phrased with this rng."""
        self.said: list[tuple[str, dict[str, object]]] = []
        self.answered = False
        """Whether build() made the answer form."""
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
        self.said.append((intent, slots))

    def say_common(self, intent: str, /, **slots: object) -> None:
        self.sentences.append(phrase("_common", intent, self.rng, **slots))
        self.said.append(("_common", slots))

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

    # ---- answer form ---------------------------------------------------------------------
    def _answer_intent(self) -> str | None:
        """The intent to phrase as a question when this task can take the answer form, else None."""
        if self.answer_rng is None or self._primary is None or self._out_dir is not None or self.knobs.more_steps:
            return None
        rel, _want, norm = self._primary
        path, out = f"{W}/{rel}", f"> {q(rel)}"
        if norm not in ANSWER_NORMS or len(self.said) != 1 or self.said[0][1].get("out") != show(rel):
            return None
        intent = self.said[0][0]
        if ANSWER_PREFIX + intent not in templates(self.family):
            return None
        if sum(c.get("path") == path for c in self.checks) != 1:  # the output is checked once: the primary
            return None
        mentions = [s for s in self.steps if rel in s]
        if mentions != self.steps[-1:] or not self.steps[-1].endswith(out) or self.steps[-1].endswith(">" + out):
            return None
        return intent

    def _to_answer_form(self, intent: str) -> None:
        assert self._primary is not None and self.answer_rng is not None
        rel, want, norm = self._primary
        rng, slots = self.answer_rng, self.said[0][1]
        self.sentences = [phrase(self.family, ANSWER_PREFIX + intent, rng, **slots)
                          + ANSWER_NOTES[rng.randrange(len(ANSWER_NOTES))]]
        self.steps[-1] = self.steps[-1][:-len(f"> {q(rel)}")].rstrip()
        path = f"{W}/{rel}"
        self.checks = [c for c in self.checks if c.get("path") != path]
        # checker.py reads the host's answer file through a `run` check: the checker itself (copied
        # into every task, synth-heldout's included) stays byte-identical
        self.checks += [{"t": "run", "cmd": f"cat {ANSWER_PATH}", "cwd": W, "norm": norm, "want": want, "code": 0},
                        {"t": "absent", "path": path}]
        self.tags.append("answer")
        self.answered = True

    def build(self) -> Task:
        """The finished task (solution known by construction)."""
        if intent := self._answer_intent():
            self._to_answer_form(intent)
        elif self.knobs.more_steps:
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
            metadata={answer.KEY: dict(answer.RECORD)} if self.answered else {},
        )


Generate = Callable[..., Task]
"""A skill family's `generate(level, rng, knobs, answer_rng=None) -> Task` (answer_rng: the
answer form where the task allows it, TaskBuilder)."""


def level_generator(name: str, version: int, levels: Sequence[Callable[[TaskBuilder], None]],
                    breadth: dict[int, Callable[[TaskBuilder], None]] | None = None) -> Generate:
    """The `generate` of a family whose levels each fill a fresh TaskBuilder: `levels[0]` is
    level 1. A level outside them is a KeyError (callers check levels: skills.check_level).
    `breadth`: per level, the family's breadth intents (programs and flags the held-out suites use
    that the level's own intents never ask for), built instead when `generate(..., breadth=True)`
    (the synthesis.breadth share; tagged `breadth`)."""
    by_level = dict(enumerate(levels, start=1))
    wide = dict(breadth or {})

    def generate(level: int, rng: random.Random, knobs: Knobs, answer_rng: random.Random | None = None,
                 breadth: bool = False) -> Task:
        b = TaskBuilder(name, version, level, rng, knobs, answer_rng)
        if breadth and level in wide:
            b.tag("breadth")
            wide[level](b)
        else:
            by_level[level](b)
        return b.build()

    return generate
