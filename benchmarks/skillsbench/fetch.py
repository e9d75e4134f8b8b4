"""Export SkillsBench's tasks (Harbor format) at a pinned commit (kept out of the repository).

    .venv/bin/python benchmarks/skillsbench/fetch.py benchmarks/skillsbench/tasks [--mirror DIR]
    .venv/bin/python benchmarks/skillsbench/fetch.py benchmarks/skillsbench/tasks-noskills --skills off
    clawloop eval benchmarks/skillsbench/tasks --agent oracle [--skills on|off]   # and --agent noop

Where from: SkillsBench's own repository (benchflow-ai/skillsbench) could not be had here, so
REPO is UCSB-NLP-Chang/Skill-Usage, the code and data of "How Well Do Agentic Skills Work in the
Wild" (arXiv 2604.04323, MIT), whose `tasks/` holds SkillsBench's 87 task directories as
published (`task.toml`, `instruction.md`, `environment/Dockerfile` + `environment/skills/<skill>/
SKILL.md`, `tests/`, `solution/solve.sh`; authors and e-mails of benchflow.ai in task.toml). OUT
gets OUT/<task>/ for each, and PIN.json (repo, commit, tasks, incomplete).

Skills on and off, as the benchmark reports both: OUT as published has the skills in the image
(its Dockerfile COPYs environment/skills to each agent's folder); `clawloop eval OUT --skills
off` drops them at load time and `--skills on` also lists them in the instruction. `--skills
off` here writes a copy without environment/skills/ and without the Dockerfile's `COPY skills
...` lines (what SkillsBench's no-skills runs use), for an `eval.suites` entry of its own.

The repository comes from `--mirror DIR` holding `owner+name/repo` git dirs when given, else a
shallow fetch from github.com; files are read one by one with `git cat-file`, and a task with
any object missing from the source (a mirror may leave out large blobs: videos, pcaps) is left
out whole and listed in PIN.json. The test (tests/test_bench_fetch.py) runs this on a
hand-written repository of the same layout.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared git reader
from git_source import blobs, git, has, source, write_blob  # noqa: E402

REPO = "UCSB-NLP-Chang/Skill-Usage"
COMMIT = "03446d16f7b659ccc93ac5bd512f62e9b7fabb45"
TASKS = "tasks"
COPY_SKILLS = re.compile(r"^\s*(COPY|ADD)\s+(--\S+\s+)*\.?/?skills(/\S*)?\s+\S+\s*$", re.I)
"""A Dockerfile line that copies environment/skills (or part of it) into the image."""


def without_skills(dockerfile: str) -> str:
    """The Dockerfile minus its `COPY skills ...` lines."""
    return "".join(line for line in dockerfile.splitlines(keepends=True) if not COPY_SKILLS.match(line))


def export(out: Path, mirror: Path | None = None, commit: str = COMMIT, skills: str = "on") -> dict:
    """Write every complete task of `commit` under `out` (skills "off": without them); returns PIN.json's record."""
    by_task: dict[str, list[tuple[str, str, bool]]] = defaultdict(list)
    written, incomplete = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        src = source(REPO, commit, mirror, Path(tmp))
        for name, obj, x in blobs(src, commit, TASKS):
            rel = name[len(TASKS) + 1:]
            if "/" in rel:
                by_task[rel.split("/", 1)[0]].append((rel, obj, x))
        for task, files in sorted(by_task.items()):
            if skills == "off":
                files = [f for f in files if not f[0].startswith(f"{task}/environment/skills/")]
            lacking = [rel for rel, obj, _ in files if not has(src, obj)]
            if lacking:
                incomplete[task] = lacking
                continue
            shutil.rmtree(out / task, ignore_errors=True)
            for rel, obj, x in files:
                data = None
                if skills == "off" and rel == f"{task}/environment/Dockerfile":
                    data = without_skills(git(src, "cat-file", "blob", obj).decode()).encode()
                write_blob(src, obj, out / rel, x, data)
            written.append(task)
    pin = {"repo": REPO, "commit": commit, "skills": skills, "tasks": len(written), "incomplete": incomplete}
    (out / "PIN.json").write_text(json.dumps(pin, indent=1) + "\n")
    return pin


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mirror", type=Path, default=None, help="dir of owner+name/repo git dirs")
    ap.add_argument("--commit", default=COMMIT)
    ap.add_argument("--skills", choices=("on", "off"), default="on",
                    help="off: without environment/skills and the Dockerfile's COPY of it")
    a = ap.parse_args()
    pin = export(a.out, a.mirror, a.commit, a.skills)
    print(f"{pin['tasks']} SkillsBench tasks (skills {a.skills}) of {REPO}@{a.commit[:12]} in {a.out}"
          + (f"; left out (objects not in the source): {', '.join(pin['incomplete'])}" if pin["incomplete"] else ""))


if __name__ == "__main__":
    main()
