"""The skill library: one module per family, each `generate(level, rng, knobs) -> Task`.

Family names are a contract: the held-out benchmark and the diagnosis tag tasks with them.
`git` is only offered when git exists (its tasks need it inside the sandbox).
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from clawloop.config.knobs import LEVELS
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError

# family name -> module (modules avoid stdlib names: json/csv would shadow them in tooling).
_MODULES = {
    "files": "files",
    "text_search": "text_search",
    "sort_count": "sort_count",
    "stream_edit": "stream_edit",
    "json": "json_data",
    "csv": "csv_data",
    "archives": "archives",
    "permissions_links": "permissions_links",
    "find_bulk": "find_bulk",
    "pipes_redirection": "pipes_redirection",
    "scripting": "scripting",
    "debugging": "debugging",
    "git": "git_repo",
    "env_processes": "env_processes",
}


@dataclass(frozen=True)
class SkillFamily:
    """One generator family."""

    name: str
    version: int
    """Bumped whenever the family's output changes for a given seed."""
    generate: Callable[..., Task]
    """`generate(level, rng, knobs, answer_rng=None)` (clawloop.phases.synthesize.builder.Generate)."""
    levels: dict[int, str]
    """What each level adds (docs/skills.md is written from this)."""
    breadth: frozenset[int] = frozenset()
    """Levels with breadth intents (the module's BREADTH; `generate(..., breadth=True)` builds one)."""

    @property
    def generator_id(self) -> str:
        return f"{self.name}@{self.version}"


def git_available() -> bool:
    """git tasks need git in the sandbox, which binds the host's /usr."""
    return shutil.which("git") is not None or os.path.exists("/usr/bin/git")


@cache
def families() -> dict[str, SkillFamily]:
    """Every available family by name, in the canonical order."""
    out: dict[str, SkillFamily] = {}
    for name, module in _MODULES.items():
        if name == "git" and not git_available():
            continue
        mod = importlib.import_module(f"clawloop.phases.synthesize.skills.{module}")
        out[name] = SkillFamily(name=name, version=mod.VERSION, generate=mod.generate, levels=mod.LEVELS,
                                breadth=frozenset(getattr(mod, "BREADTH", {})))
    return out


def family(name: str) -> SkillFamily:
    """The family `name`; an unknown name is a ClawloopError listing the known ones."""
    fams = families()
    if name not in fams:
        raise ClawloopError(f"unknown skill {name!r} (known: {', '.join(fams)})")
    return fams[name]


def check_level(level: int) -> int:
    if level not in LEVELS:
        raise ClawloopError(f"level {level} is outside 1-5")
    return level
