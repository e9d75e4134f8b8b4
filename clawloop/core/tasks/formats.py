"""Benchmark formats: detect a suite's layout, load it as Tasks, run and verify by format.

Formats: `harbor` (Harbor / Terminal-Bench 2 / SkillsBench task dirs, Terminal-Bench 1 too),
`jsonl` (a clawloop pool), `clawgym` (ClawGym-Bench, `data_entry.json`), `claw-eval-live`
(Claw-Eval-Live, `task.yaml` + `grader.py`), `intercode` (an InterCode-Bash export:
`data/nl2bash/nl2bash_fs_N.json` + `docker/bash_scripts/`); `auto` detects. Public API:

    detect_format(path) -> str
    load_suite_any(path, fmt="auto", *, name=None, grader_root=None, skills=None,
                   pass_threshold=0.8) -> tasks.suite.Suite     # lenient: bad tasks become items
    score_fields(records) -> {"mean_score", "full_score_rate"}  # where scores are fractional
                              (+ strict_mean_score, strict_full_score_rate: InterCode's strict score)
    apply_skills(task, "on"|"off") -> Task                      # SkillsBench with / without skills

Running and verifying is the same for every format (`clawloop.core.tasks.environment`, one
`TaskEnvironment` per run): what differs per format is the verifier adapter the loader's
metadata selects (`clawloop.core.tasks.adapters`). ClawGym, Claw-Eval-Live and InterCode records
carry `benchmark` and, for Claw-Eval-Live and InterCode, every score term (`scores`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from clawloop.core.tasks import claw_eval_live as cel
from clawloop.core.tasks import clawgym, intercode
from clawloop.core.tasks.harbor import find_task_dirs, is_task_dir
from clawloop.core.tasks.suite import Suite, SuiteItem, load_suite
from clawloop.core.tasks.task import FileSpec, Task
from clawloop.core.tasks.verifier import PASS_THRESHOLD
from clawloop.core.trajectory import EpisodeRecord
from clawloop.errors import ClawloopError

FORMATS = ("auto", "harbor", "jsonl", "clawgym", "claw-eval-live", "intercode")
"""Values of `clawloop eval --format`."""
SKILLS_MODES = ("on", "off")
FRACTIONAL = ("clawgym", "claw-eval-live", "intercode")
"""Benchmarks whose scores are fractional: their summaries carry mean_score."""
SKILLS_HOME = "/root/.claude/skills"
"""Where SkillsBench puts skills when its Dockerfile does not say (the Claude Code location)."""


# ---------------------------------------------------------------------------------- detection
def _harbor_dirs(path: Path) -> list[Path]:
    return [d for d in find_task_dirs(path) if not cel.is_claw_eval_task(d)]


def detect_format(path: str | Path) -> str:
    """The layout of a suite path; ClawloopError for none or a mix of several."""
    path = Path(path)
    if path.is_file():
        if path.suffix in (".jsonl", ".ndjson"):
            return "jsonl"
        raise ClawloopError(f"{path}: not a suite (a .jsonl pool or a directory of tasks)")
    if not path.is_dir():
        raise ClawloopError(f"{path}: no such suite (a task directory, a directory of tasks, or a .jsonl pool)")
    if intercode.is_intercode_export(path):
        return "intercode"
    if clawgym.is_clawgym_task(path):
        return "clawgym"
    if cel.is_claw_eval_task(path):
        return "claw-eval-live"
    if is_task_dir(path):
        return "harbor"
    found = [fmt for fmt, dirs in (("harbor", _harbor_dirs(path)), ("clawgym", clawgym.find_clawgym_dirs(path)),
                                   ("claw-eval-live", cel.find_claw_eval_dirs(path)),
                                   ("intercode", intercode.find_intercode_roots(path))) if dirs]
    if not found:
        raise ClawloopError(f"{path}: no known task layout (Harbor task.toml, ClawGym data_entry.json, "
                            "Claw-Eval-Live task.yaml + grader.py, InterCode data/nl2bash/)")
    if len(found) > 1:
        raise ClawloopError(f"{path}: mixed task layouts ({', '.join(found)}); give --format or split the suite")
    return found[0]


# ------------------------------------------------------------------------------------ loading
def load_suite_any(path: str | Path, fmt: str = "auto", *, name: str | None = None,
                   grader_root: str | Path | None = None, skills: str | None = None,
                   pass_threshold: float = cel.PASS_THRESHOLD) -> Suite:
    """Load a suite of any format; a task that fails to load becomes an item with its error.

    `grader_root`: the Claw-Eval-Live checkout whose package grades its tasks. `skills`: "on" or
    "off" runs Harbor (SkillsBench) tasks with or without their environment/skills (None: as
    imported). `pass_threshold`: Claw-Eval-Live's completion threshold for "passed".
    """
    path = Path(path)
    if fmt not in FORMATS:
        raise ClawloopError(f"--format: unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if skills is not None and skills not in SKILLS_MODES:
        raise ClawloopError(f"--skills: expected on or off, got {skills!r}")
    fmt = detect_format(path) if fmt == "auto" else fmt
    if skills is not None and fmt not in ("harbor", "jsonl"):
        raise ClawloopError(f"--skills: applies to Harbor (SkillsBench) tasks, not to {fmt}")
    if fmt in ("harbor", "jsonl"):
        if fmt == "jsonl" and not path.is_file():
            raise ClawloopError(f"{path}: --format jsonl needs a .jsonl file")
        if fmt == "harbor" and path.is_file():
            raise ClawloopError(f"{path}: --format harbor needs a directory")
        suite = load_suite(path, name=name)
    elif fmt == "intercode":  # the setup scripts build each file system once (cached, clawloop.core.tasks.intercode)
        if not path.is_dir():
            raise ClawloopError(f"{path}: --format intercode needs a directory (an InterCode-Bash export)")
        suite = intercode.load_intercode_suite(path, name=name)
    else:
        finder, loader = ((clawgym.find_clawgym_dirs, clawgym.load_clawgym_task) if fmt == "clawgym" else
                          (cel.find_claw_eval_dirs, cel.load_claw_eval_task))
        if not path.is_dir():
            raise ClawloopError(f"{path}: --format {fmt} needs a directory")
        dirs = finder(path)
        if not dirs:
            raise ClawloopError(f"{path}: no {fmt} tasks found")
        single = dirs == [path]
        suite = Suite(name or (path.resolve().parent.name if single else path.resolve().name), path)
        opts: dict[str, Any] = {} if fmt == "clawgym" else {"grader_root": grader_root,
                                                             "pass_threshold": pass_threshold}
        for d in dirs:
            try:
                suite.items.append(SuiteItem(suite.name, d.name, loader(d, source=suite.name, **opts)))
            except ClawloopError as e:
                suite.items.append(SuiteItem(suite.name, d.name, None, str(e)))
    for item in suite.items:
        if item.task is None:
            continue
        if skills is not None:
            item.task = apply_skills(item.task, skills)
        if fmt in ("harbor", "jsonl") and cel.is_claw_eval(item.task) and grader_root is not None:
            # The user names the root (the consent to copy its grading library into the sandbox);
            # whatever root a pool line carried is replaced, never trusted.
            rec = {**item.task.metadata[cel.KEY], "grader_root": cel.trust_grader_root(grader_root)}
            item.task = item.task.model_copy(update={"metadata": {**item.task.metadata, cel.KEY: rec}})
    return suite


# ------------------------------------------------------------------------------------- skills
def _frontmatter(text: str) -> dict[str, str]:
    m = re.match(r"---\s*\n(.*?)\n---", text, re.S)
    out: dict[str, str] = {}
    for line in (m.group(1).splitlines() if m else []):
        k, sep, v = line.partition(":")
        if sep and k.strip() in ("name", "description"):
            out[k.strip()] = v.strip().strip("\"'")
    return out


def apply_skills(task: Task, mode: str) -> Task:
    """SkillsBench's comparison: "off" drops the files its Dockerfile copies from environment/skills/;
    "on" keeps them (placing them under /root/.claude/skills when the Dockerfile does not) and
    lists each skill (name, description, SKILL.md path) at the end of the instruction, as a
    skill-aware agent harness would show them. Tasks without skills are returned unchanged."""
    h = task.metadata.get("harbor") if isinstance(task.metadata.get("harbor"), dict) else {}
    copies = {dest: src for dest, src in (h.get("copy_sources") or {}).items()
              if src == "skills" or src.startswith("skills/")}
    loose = {k: v for k, v in (h.get("environment_files") or {}).items() if k.startswith("skills/")}
    if not copies and not loose:
        return task
    files = dict(task.files)
    if mode == "off":
        files = {k: v for k, v in files.items() if k not in copies}
        return task.model_copy(update={"files": files, "metadata": {**task.metadata, "skills": "off"}})
    if not copies:
        for rel, spec in loose.items():
            dest = f"{SKILLS_HOME}/{rel.removeprefix('skills/')}"
            files[dest], copies[dest] = FileSpec.model_validate(spec), rel
    listed: dict[str, str] = {}
    for dest, src in sorted(copies.items()):
        if src.endswith("/SKILL.md") and src.count("/") == 2 and src not in listed:
            fm = _frontmatter(files[dest].data().decode("utf-8", errors="replace")) if dest in files else {}
            listed[src] = f"- {fm.get('name') or src.split('/')[1]}: {fm.get('description') or 'no description'}" \
                          f" ({dest})"
    instruction = task.instruction
    if listed:
        instruction = (instruction.rstrip("\n") + "\n\nSkills available in this environment (read a skill's "
                       "SKILL.md before using it):\n" + "\n".join(listed.values()) + "\n")
    return Task.model_validate({**task.model_dump(exclude={"id"}), "instruction": instruction, "files": files,
                                "metadata": {**task.metadata, "skills": "on"}})


# --------------------------------------------------------------------------------- scores
def score_fields(records: Iterable[EpisodeRecord]) -> dict[str, float | None]:
    """mean_score (mean reward of scored episodes) and full_score_rate (share at 1.0), for groups
    holding a fractional-score benchmark or a fractional reward; {} otherwise. Both are None when
    no episode was scored (all errors or skips): 0.0 would read as a real zero."""
    records = list(records)
    rewards = [r.reward for r in records if r.outcome in ("passed", "failed") and r.reward is not None]
    fractional = any(r.benchmark in FRACTIONAL for r in records) or \
        any(x not in (0.0, 1.0) for x in rewards)
    if not fractional:
        return {}
    if not rewards:
        return {"mean_score": None, "full_score_rate": None}
    out: dict[str, float | None] = {
        "mean_score": round(sum(rewards) / len(rewards), 4),
        "full_score_rate": round(sum(1 for x in rewards if x >= PASS_THRESHOLD) / len(rewards), 4)}
    scored = [(r.reward, (r.scores or {}).get("strict_reward")) for r in records
              if r.outcome in ("passed", "failed") and r.reward is not None]
    if any(isinstance(x, int | float) for _, x in scored):
        # InterCode's strict score (content-compared, never the verdict) beside its own; a record
        # without one (another format) counts its reward, which nothing loosened.
        strict = [float(x) if isinstance(x, int | float) else float(r) for r, x in scored]
        out.update(strict_mean_score=round(sum(strict) / len(strict), 4),
                   strict_full_score_rate=round(sum(1 for x in strict if x >= PASS_THRESHOLD) / len(strict), 4))
    return out
