"""Requests in the policy's own words: a share of the procedural pool reworded by the current policy.

Every procedural instruction comes from a template file, so a pool of 384 tasks holds a few hundred
phrasings however many instances it draws; shell-core's requests are phrased unlike any of them,
and most of the trained policy's level 1-2 failures there are the command itself on a request it
did not recognise (docs/experiments/2026-12-06-twice-the-pool.md). Here the current policy rewrites a
share of the pool's requests (clawloop/core/agent/templates/paraphrase.j2), sampled, teacher-free. The
task keeps its workspace, verifier and reference: only the wording changes, so a rewording is kept
only when it cannot have changed what the verifier wants (`refusal`):

- every name, path, number and quoted value of the original is in it, exactly as written;
- it asks for the task, not how to do it nor the asker back ("How do I ...?", "Please provide ...");
- it asks for the same acts as the original, by their verbs (`_ACTIONS`: not copy for move, enter for
  create, nor a question for a removal), and does not echo the prompt;
- it names nothing specific that the original does not (no invented file, value or command);
- an answer task (graded on the last command's output) is not asked to save a file;
- it is one paragraph of sensible length and actually reworded (`min_change` of the words).

A refused rewording leaves the task as the generator wrote it; the stage records why each was refused.
"""

from __future__ import annotations

import functools
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clawloop.config.synthesis import ParaphraseParams
from clawloop.core.agent.harness import render
from clawloop.core.progress import Progress
from clawloop.core.tasks.answer import KEY as ANSWER_KEY
from clawloop.core.tasks.task import Task
from clawloop.phases.synthesize.words import words
from clawloop.policy.types import Policy, SamplingParams

TAG = "paraphrased"
"""Tag of a task whose instruction the policy reworded (its original in metadata['paraphrase'])."""
BATCH = 32
"""Requests per generate call."""

_QUOTED = re.compile(r'"([^"\n]+)"|`([^`\n]+)`|(?<!\w)\'([^\'\n]+)\'(?!\w)')
_LEAD = "\"'`,;:!?()[]{}<>"
_TRAIL = _LEAD + "."
"""A token's leading `.` stays (`.bak` names files); a trailing one ends the sentence."""
_SPECIFIC = re.compile(r"[\d/._=$*@#%+~:\\|&<>^]|[A-Za-z][A-Z]|^[A-Z]{2,}$|\w_\w")
"""A token is specific when it has a digit, a path or file character, an operator, or capitals
after its first letter (ERROR, McDonald, a_b): the kind of token a verifier compares."""
_ANSWER_TURN = re.compile(r"\b(save|saving|store|storing|into a file|to a file|in a file|new file)\b", re.I)
_WORDS = re.compile(r"[a-z0-9]+")
_LETTERS = re.compile(r"[A-Za-z]+")
_ACTIONS = {
    "copy": r"cop(?:y|ies|ied|ying)|duplicat\w*|clon\w*|replicat\w*",
    "move": r"mov\w*|relocat\w*|renam\w*|transfer\w*|shift\w*|file away",
    "delete": r"delet\w*|eras\w*|remov\w*|clean\w*|drop\w*|get rid|purg\w*|wip\w*|discard\w*",
    "create": r"creat\w*|mak\w*|set up|build\w*|mkdir|generat\w*|new",
    "enter": r"enter\w*|cd|navigat\w*|go to|switch to|open\w*",
    "sort": r"sort\w*|order\w*|arrang\w*|rank\w*",
    "pack": r"compress\w*|archiv\w*|zip\w*|tar|pack\w*|bundl\w*",
    "unpack": r"extract\w*|unpack\w*|decompress\w*|unzip\w*|untar\w*|uncompress\w*",
    "replace": r"replac\w*|substitut\w*|swap\w*",
    "append": r"append\w*|add\w*|insert\w*|attach\w*",
    "link": r"link\w*|symlink\w*|shortcut\w*",
    "permission": r"chmod|permission\w*|executabl\w*|read-only|writable|readable|mode",
    "run": r"run\w*|execut\w*|invok\w*|launch\w*",
}
"""Verbs of the acts a task can ask for, grouped by act: a rewording must ask for the acts the
original does (the 0.5B base turned "create a directory" into "enter" and "put into" into "copy")."""
_ACT = {act: re.compile(rf"\b(?:{words})\b", re.I) for act, words in _ACTIONS.items()}
_ECHO = re.compile(r"other words|sentence order|as (?:it is|they are|it was) written|different person|keep the meaning|"
                   r"rewrit\w*|reword\w*|request|assistant|how to do it|file names?, paths?|quoted text|"
                   r"^(?:certainly|sure|of course)\b", re.I)
"""Phrases of the prompt (paraphrase.j2) that a rewording echoes instead of rewording, and a chat
reply's opener."""
_ASKS_BACK = re.compile(r"\bhow (?:do|can|could|would|should) (?:i|you|we|one)\b|\bwhat commands?\b|"
                        r"\b(?:do|would) you (?:need|want|like)\b|\bplease (?:provide|send|share)\b", re.I)
"""A rewording that asks how to do the task, or asks the asker back, instead of asking for it (measured:
"rename a to b" became "How do I rename a to b?", "fix the typo in s.sh" became "Please provide the script")."""


def _phrases(pattern: re.Pattern[str], text: str) -> set[str]:
    return {m.group(0).lower() for m in pattern.finditer(text)}


def acts(text: str) -> set[str]:
    """The acts `text` asks for, by their verbs (`_ACTIONS`)."""
    return {act for act, pattern in _ACT.items() if pattern.search(text)}


def _tokens(text: str) -> list[str]:
    return [t.lstrip(_LEAD).rstrip(_TRAIL) for t in text.split()]


def specific_tokens(text: str) -> set[str]:
    """The whitespace tokens of `text` (trimmed of quotes and punctuation) that look specific."""
    return {t for t in _tokens(text) if t and _SPECIFIC.search(t) and not t.endswith("'s")}


@functools.cache
def _values() -> frozenset[str]:
    """The generators' word lists (data/*.txt): a word of them in a request is a value the verifier
    compares (the word to grep for, the directory to make), not wording."""
    return frozenset(w for kind in ("nouns", "adjectives", "cities", "fruits", "people", "services")
                     for w in words(kind))


def must_keep(instruction: str) -> list[str]:
    """What a rewording of `instruction` must contain verbatim: its quoted values, its specific
    tokens (names, paths, numbers, capitalised words) and the generators' value words, longest first."""
    keep = {next(g for g in m.groups() if g is not None).strip() for m in _QUOTED.finditer(instruction)}
    keep |= specific_tokens(instruction)
    keep |= {w for w in _LETTERS.findall(instruction) if w in _values()}
    return sorted((k for k in keep if k), key=lambda k: (-len(k), k))


def _change(a: str, b: str) -> float:
    wa, wb = set(_WORDS.findall(a.lower())), set(_WORDS.findall(b.lower()))
    return 1.0 - len(wa & wb) / max(1, len(wa | wb))


def clean(reply: str) -> str:
    """The rewording in a reply: its first line that is not a lead-in ("Here is ...:"), a code fence
    or blank, without wrapping quotes."""
    lines = [ln.strip() for ln in reply.splitlines()]
    text = next((ln for ln in lines if ln and not ln.startswith("```") and not ln.endswith(":")), "")
    text = re.sub(r"^(?:here is |here's )?(?:the )?(?:rewritten|reworded|new) (?:request|version)[^:]*:\s*", "",
                  text, flags=re.I)
    if len(text) > 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def refusal(task: Task, text: str, min_change: float) -> str | None:
    """Why `text` is refused as a rewording of `task`'s instruction (a short reason key), or None."""
    original = task.instruction.strip()
    if not text:
        return "empty"
    if "```" in text or "\n" in text:
        return "shape"
    if not 0.5 * len(original) <= len(text) <= 2.5 * len(original) + 40:
        return "length"
    if _phrases(_ECHO, text) - _phrases(_ECHO, original):
        return "echo"
    if _phrases(_ASKS_BACK, text) - _phrases(_ASKS_BACK, original):
        return "asks_back"
    if any(k not in text for k in must_keep(original)):
        return "dropped"
    if acts(text) != acts(original):
        return "act"
    workdir = task.workdir.rstrip("/") + "/"
    for t in specific_tokens(text):
        bare = t[len(workdir):] if t.startswith(workdir) else t
        if t not in original and bare not in original:
            return "added"
    for m in _QUOTED.finditer(text):  # a quoted span: a value, a command or a name
        if next(g for g in m.groups() if g is not None) not in original:
            return "added"
    steps = task.solution.steps if task.solution else []
    if any(len(s) >= 6 and s in text for s in steps):
        return "leaks"
    if ANSWER_KEY in task.metadata and _ANSWER_TURN.search(text) and not _ANSWER_TURN.search(original):
        return "answer_form"
    if _change(original, text) < min_change:
        return "unchanged"
    return None


def eligible(task: Task) -> bool:
    """A one-paragraph request: multi-line ones (chained parts, literal blocks) keep their layout."""
    return "\n" not in task.instruction.strip() and "```" not in task.instruction


@dataclass
class ParaphraseStats:
    """What the rewording did to one pool (manifest.json's `paraphrase`)."""

    offered: int = 0
    kept: int = 0
    samples: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    examples: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"offered": self.offered, "kept": self.kept, "samples": self.samples,
                "refused": dict(self.refused.most_common()), "examples": self.examples}


def prompt(instruction: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": render("paraphrase.j2", instruction=instruction)}]


def paraphrase(tasks: Sequence[Task], policy: Policy, params: ParaphraseParams, *, seed: int,
               progress: bool = True) -> tuple[list[Task], ParaphraseStats]:
    """`tasks` with a `params.share` of the eligible ones reworded by `policy` (`tries` samples each
    until one passes `refusal`), in order; the others as they were."""
    stats = ParaphraseStats()
    rng = random.Random(f"paraphrase/{seed}")
    picked = [i for i, t in enumerate(tasks) if eligible(t) and rng.random() < params.share]
    stats.offered = len(picked)
    out = list(tasks)
    pending = picked
    with Progress("paraphrase", len(picked), "requests", enabled=progress and bool(picked)) as bar:
        for attempt in range(params.tries):
            sampling = SamplingParams(temperature=params.temperature, max_new_tokens=params.max_new_tokens,
                                      seed=seed * 1000 + attempt)
            still: list[int] = []
            for start in range(0, len(pending), BATCH):
                batch = pending[start:start + BATCH]
                gens = policy.generate([prompt(tasks[i].instruction) for i in batch], sampling, tools=None)
                bar.add_tokens(sum(g.completion_tokens for g in gens))
                for i, gen in zip(batch, gens, strict=True):
                    stats.samples += 1
                    text = clean(gen.text) if gen.finish_reason == "stop" else ""
                    why = refusal(tasks[i], text, params.min_change)
                    if why is None:
                        out[i] = reworded(tasks[i], text)
                        stats.kept += 1
                        bar.advance(1, "kept")
                        if len(stats.examples) < 12:
                            stats.examples.append({"original": tasks[i].instruction, "reworded": text})
                    else:
                        stats.refused[why] += 1
                        still.append(i)
            pending = still
        bar.advance(len(pending), "refused")
    return out, stats


def reworded(task: Task, text: str) -> Task:
    """`task` asked in `text`, the original kept in its metadata."""
    return task.model_copy(update={"instruction": text, "tags": (*task.tags, TAG),
                                   "metadata": {**task.metadata, "paraphrase": {"of": task.instruction}}})
