"""The published InterCode-Bash runs (GPT-4, GPT-3.5, ...) as an export ships them: context for the
report's InterCode row, never an input to the loop."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from clawloop.core.tasks.intercode import find_intercode_roots

RESULTS_DIR = "data/results/bash"
_RESULTS_FILE = re.compile(r"ic_bash_multiturn_(.+)_10_turns_fs_(\d+)\.json")
PUBLISHED_NAMES = {"gpt-4": "GPT-4", "gpt-3.5": "GPT-3.5", "vicuna": "Vicuna-13B", "starchat": "StarChat",
                   "text-davinci-003": "text-davinci-003", "text-bison-001": "PaLM-2 text-bison",
                   "chat-bison-001": "PaLM-2 chat-bison"}
"""The published multi-turn runs (10 turns) by results dir, as the InterCode paper names them."""


def published_results(path: str | Path) -> dict[str, dict[str, bool]]:
    """Per-task success of each published run in an export (data/results/bash/<model>/...):
    model dir → task name (`fsN-II`) → whether its best turn reached reward 1.0 (InterCode's
    `summary.max_reward`; GPT-4: 97 of 200). A file that does not parse is left out: the
    published figures are context for the report, never an input to the loop."""
    out: dict[str, dict[str, bool]] = {}
    for root in find_intercode_roots(path):
        results = root / RESULTS_DIR
        for f in sorted(results.glob("*/*.json")) if results.is_dir() else ():
            m = _RESULTS_FILE.fullmatch(f.name)
            if not m or m.group(1) != f.parent.name:
                continue
            try:
                runs = json.loads(f.read_text(encoding="utf-8"))
                got = {f"fs{int(m.group(2))}-{int(k):02d}": float(r["summary"]["max_reward"]) >= 1.0
                       for k, r in runs.items()}
            except (OSError, ValueError, TypeError, KeyError, AttributeError):
                continue
            out.setdefault(f.parent.name, {}).update(got)
    return out


def published_on(path: str | Path, names: Sequence[str]) -> dict[str, dict[str, int]]:
    """Each published run's success on the tasks `names` (the suite's evaluated subset):
    model (as the paper names it) → {"passed", "tasks"} over the names that run has, and its "all_passed" / "all_tasks"
    over every task it ran (the figure the paper reports)."""
    out = {}
    for model, runs in sorted(published_results(path).items()):
        have = [n for n in names if n in runs]
        if have:
            out[PUBLISHED_NAMES.get(model, model)] = {"passed": sum(runs[n] for n in have), "tasks": len(have),
                          "all_passed": sum(runs.values()), "all_tasks": len(runs)}
    return out
