"""Chained tasks: one request that asks for two or three generated tasks in a row.

Generated tasks mostly need one command (255 of the 384 references of iteration 1's pool), so the
process-shaped references teach look -> one act -> check -> submit. Shell-core's easy tasks often
want two acts: measured at iteration 1 (2026-12-06), the trained policy made the folder and
submitted without moving the reports into it, made `config.bak/` without copying anything, and
deleted the `.pyc` files but not the `__pycache__` dirs. A chained task joins the workspaces,
checks and reference steps of its parts, so its reference replays look -> act -> act (-> act) ->
check -> submit and the verifier wants every part done.

Parts are joined only where they cannot see each other: the same workdir, no answer form, the
procedural verifier, and no path one part names (a file, a checked path) on, above or below a
path another names. A part whose command reaches wider than its own names (`rm *.log` in the
shared folder) can still break another's check: agent-free validation runs the joined reference
against the joined checks and rejects what fails.
"""

from __future__ import annotations

import json
import posixpath
import random
from collections.abc import Sequence

from clawloop.core.tasks.answer import is_answer_task
from clawloop.core.tasks.task import FileSpec, Task

SPEC = "spec.json"
TEMPLATES = {
    2: ("{0} After that: {1}", "Two things. First: {0} Second: {1}", "{0} Once that is done: {1}",
        "Please do the following, in order.\n1. {0}\n2. {1}"),
    3: ("{0} After that: {1} Finally: {2}", "Three things. First: {0} Second: {1} Third: {2}",
        "Please do the following, in order.\n1. {0}\n2. {1}\n3. {2}"),
}
"""How the parts' instructions are joined. The numbered list spans lines, so the conversational,
starting-elsewhere and at-length forms leave those alone, as they leave every multi-line text."""


def _names(task: Task) -> set[str]:
    """The absolute paths a part names: its files and the paths its checks look at."""
    spec = json.loads(task.verifier.files[SPEC].data())
    out = {posixpath.normpath(p if p.startswith("/") else posixpath.join(task.workdir, p)) for p in task.files}
    out |= {posixpath.normpath(c["path"]) for c in spec["checks"] if isinstance(c.get("path"), str) and c["path"]}
    return out


def _touch(a: str, b: str) -> bool:
    """Whether one path is the other or lies under it."""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def compatible(parts: Sequence[Task]) -> bool:
    """Whether `parts` can share one workspace and one verifier (module docstring)."""
    first = parts[0]
    if any(is_answer_task(t) or t.solution is None or t.needs_image or t.workdir != first.workdir
           or set(t.verifier.files) != set(first.verifier.files) or SPEC not in t.verifier.files
           or t.verifier.entry != first.verifier.entry for t in parts):
        return False
    if any(t.verifier.files[n] != first.verifier.files[n] for t in parts[1:] for n in first.verifier.files if n != SPEC):
        return False
    helpers = [n for t in parts for n in t.solution.files]  # type: ignore[union-attr]
    if len(helpers) != len(set(helpers)):  # two parts' /solution files under one name
        return False
    env: dict[str, str] = {}
    for t in parts:
        if any(env.get(k, v) != v for k, v in t.env.items()):
            return False
        env.update(t.env)
    names = [_names(t) for t in parts]
    if any(first.workdir in n for n in names):  # a check on the shared folder itself sees every part
        return False
    return not any(_touch(a, b) for i, x in enumerate(names) for y in names[i + 1:] for a in x for b in y)


def chain(parts: Sequence[Task], rng: random.Random) -> Task | None:
    """One task asking for every part in order (the first part's skill and level), or None where
    they are not `compatible`."""
    if len(parts) not in TEMPLATES or not compatible(parts):
        return None
    texts = [t.instruction.strip() for t in parts]
    if any("\n" in x for x in texts):  # a literal block: joining would move its lines
        return None
    # a part ending mid-sentence ("... the single line: floral toronto") runs into the next one's
    # "Second:" on one line; each on its own line it cannot
    templates = [x for x in TEMPLATES[len(parts)] if "\n" in x or all(t.endswith((".", "?", "!")) for t in texts)]
    text = templates[rng.randrange(len(templates))].format(*texts)
    first = parts[0]
    checks = [c for t in parts for c in json.loads(t.verifier.files[SPEC].data())["checks"]]
    spec = first.verifier.files[SPEC].model_copy(update={"content": json.dumps({"checks": checks}, indent=2,
                                                                              sort_keys=True) + "\n"})
    solutions = [t.solution for t in parts if t.solution is not None]  # all of them: compatible
    solution = solutions[0].model_copy(update={"steps": [s for x in solutions for s in x.steps],
                                               "files": {n: f for x in solutions for n, f in x.files.items()}})
    files: dict[str, FileSpec] = {p: f for t in parts for p, f in t.files.items()}
    limits = first.limits.model_copy(update={
        "max_turns": sum(t.limits.max_turns for t in parts),
        "command_timeout_s": max(t.limits.command_timeout_s for t in parts),
        "agent_timeout_s": sum(t.limits.agent_timeout_s for t in parts),
        "verifier_timeout_s": sum(t.limits.verifier_timeout_s for t in parts)})
    return first.model_copy(update={
        "instruction": text, "files": files, "setup": [c for t in parts for c in t.setup],
        "env": {k: v for t in parts for k, v in t.env.items()},
        "verifier": first.verifier.model_copy(update={"files": {**first.verifier.files, SPEC: spec}}),
        "solution": solution, "limits": limits, "tags": (*first.tags, "chained"),
        "metadata": {**first.metadata, "chained": [{"skill": t.skill, "level": t.level} for t in parts]}})
