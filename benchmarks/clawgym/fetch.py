"""Export ClawGym-Bench's 200 eval tasks at their pinned commit (kept out of the repository).

    .venv/bin/python benchmarks/clawgym/fetch.py benchmarks/clawgym/tasks [--mirror DIR]
    clawloop eval benchmarks/clawgym/tasks --agent noop     # --format clawgym is detected

What OUT gets from ClawGym/ClawGym-Agents at COMMIT (the repository has no licence file: the data
stays theirs, which is why nothing of it is committed here): every task directory of
`RL/data/clawgym_eval/` (`data_entry.json`, `input_files/`, `reward/reward.sh` + helpers) as
OUT/<task_id>/, the split's `DATASET_README.md` as OUT/_upstream/, and PIN.json (repo, commit,
tasks). ClawGym ships no reference solutions, so `--agent oracle` has nothing to run (each task
is reported as "no reference solution"); the no-op run checks that no grader passes an empty
workspace. The repository comes from `--mirror DIR` holding `owner+name/repo` git dirs when
given, else a shallow fetch from github.com; files are read one by one with `git cat-file` (a
mirror may lack objects of unrelated paths), and a task with any object missing from the source
is left out whole and listed. The test (tests/test_bench_fetch.py) runs this on a hand-written
repository of the same layout.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared git reader
from git_source import blobs, has, source, write_blob  # noqa: E402

REPO = "ClawGym/ClawGym-Agents"
COMMIT = "0e8526d8f5e0999896c74cee4d6b998fb8a0429e"
SPLIT = "RL/data/clawgym_eval"
EXTRA = {"RL/data/DATASET_README.md": "_upstream/DATASET_README.md"}


def export_tasks(src: Path, commit: str, split: str, out: Path) -> tuple[list[str], dict[str, list[str]]]:
    """Each task directory under `split` → out/<task>/; (tasks written, task → files the source lacks)."""
    by_task: dict[str, list[tuple[str, str, bool]]] = defaultdict(list)
    for name, obj, x in blobs(src, commit, split):
        rel = name[len(split) + 1:]
        if "/" in rel:
            by_task[rel.split("/", 1)[0]].append((rel, obj, x))
    written, incomplete = [], {}
    for task, files in sorted(by_task.items()):
        lacking = [rel for rel, obj, _ in files if not has(src, obj)]
        if lacking:
            incomplete[task] = lacking
            continue
        for rel, obj, x in files:
            write_blob(src, obj, out / rel, x)
        written.append(task)
    return written, incomplete


def export(out: Path, mirror: Path | None = None, commit: str = COMMIT) -> dict:
    """Write the eval split of `commit` under `out`; returns what PIN.json records."""
    with tempfile.TemporaryDirectory() as tmp:
        src = source(REPO, commit, mirror, Path(tmp))
        tasks, incomplete = export_tasks(src, commit, SPLIT, out)
        for name, obj, x in blobs(src, commit, *EXTRA):
            write_blob(src, obj, out / EXTRA[name], x)
    pin = {"repo": REPO, "commit": commit, "split": SPLIT, "tasks": len(tasks), "incomplete": incomplete}
    (out / "PIN.json").write_text(json.dumps(pin, indent=1) + "\n")
    return pin


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mirror", type=Path, default=None, help="dir of owner+name/repo git dirs")
    ap.add_argument("--commit", default=COMMIT)
    a = ap.parse_args()
    pin = export(a.out, a.mirror, a.commit)
    print(f"{pin['tasks']} ClawGym-Bench tasks of {REPO}@{a.commit[:12]} in {a.out}"
          + (f"; left out (objects not in the source): {', '.join(pin['incomplete'])}" if pin["incomplete"] else ""))


if __name__ == "__main__":
    main()
