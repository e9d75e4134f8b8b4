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
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = "ClawGym/ClawGym-Agents"
COMMIT = "0e8526d8f5e0999896c74cee4d6b998fb8a0429e"
SPLIT = "RL/data/clawgym_eval"
EXTRA = {"RL/data/DATASET_README.md": "_upstream/DATASET_README.md"}


def _git(src: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(src), *args], check=True, capture_output=True).stdout


def source(repo: str, commit: str, mirror: Path | None, tmp: Path) -> Path:
    """The git dir holding `commit`: the mirror's, else a shallow fetch into `tmp`."""
    src = mirror / repo.replace("/", "+") / "repo" if mirror else None
    if src is not None and src.is_dir():
        return src
    src = tmp / "repo"
    subprocess.run(["git", "init", "-q", "--bare", str(src)], check=True)
    subprocess.run(["git", "--git-dir", str(src), "fetch", "-q", "--depth", "1",
                    f"https://github.com/{repo}.git", commit], check=True)
    return src


def blobs(src: Path, commit: str, path: str) -> list[tuple[str, str, bool]]:
    """(path, object, executable) of every file under `path` at `commit`."""
    rows = []
    for row in filter(None, _git(src, "ls-tree", "-r", "-z", commit, "--", path).split(b"\0")):
        meta, _, name = row.partition(b"\t")
        mode, kind, obj = meta.decode().split()
        if kind == "blob":
            rows.append((name.decode(), obj, mode == "100755"))
    return rows


def write_blob(src: Path, obj: str, dest: Path, executable: bool) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(_git(src, "cat-file", "blob", obj))
    dest.chmod(0o755 if executable else 0o644)


def has(src: Path, obj: str) -> bool:
    return subprocess.run(["git", "--git-dir", str(src), "cat-file", "-e", obj]).returncode == 0


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
