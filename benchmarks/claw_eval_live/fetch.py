"""Export Claw-Eval-Live's tasks and grading library at a pinned commit (kept out of the repository).

    .venv/bin/python benchmarks/claw_eval_live/fetch.py benchmarks/claw_eval_live/export [--mirror DIR]
    clawloop eval benchmarks/claw_eval_live/export/tasks --grader-root benchmarks/claw_eval_live/export \
        --agent noop                  # --format claw-eval-live is detected

What OUT gets from Claw-Eval-Live/Claw-Eval-Live (CC BY 4.0) at COMMIT, in the checkout's own
layout so that OUT is the grader root (`--grader-root OUT`, or $CLAWLOOP_GRADER_ROOT=OUT for an
`eval.suites` entry): `tasks/<id>/` (task.yaml, grader.py, the task's files), `src/liveclaw_500/`
(the package every grader.py imports: copied into the verifier sandbox at grading time, never
imported on the host), `pyproject.toml`, `LICENSE`, `benchmark/selected_105_tasks.json` (the
published subset and its threshold), and PIN.json (repo, commit, tasks, workspace tasks).

Only the workspace tasks run: the others need the benchmark's mock HTTP services (`services:` /
`tool_endpoints:`), which clawloop skips with that reason. The benchmark ships no reference
solutions, so `--agent oracle` has nothing to run. The repository comes from `--mirror DIR`
holding `owner+name/repo` git dirs when given, else a shallow fetch from github.com; files are
read one by one with `git cat-file`, and a task with any object missing from the source is
left out whole and listed. The test (tests/test_bench_fetch.py) runs this on a hand-written
repository of the same layout.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared git reader
from git_source import blobs, has, source, write_blob  # noqa: E402

REPO = "Claw-Eval-Live/Claw-Eval-Live"
COMMIT = "7942ebdd3db5f424564e976c3eb111ad562b19b6"
TASKS = "tasks"
LIBRARY = ("src", "pyproject.toml", "LICENSE", "benchmark/selected_105_tasks.json")


def workspace_task(task_yaml: Path) -> bool:
    """A task that needs none of the benchmark's mock services (what clawloop runs)."""
    raw = yaml.safe_load(task_yaml.read_text(encoding="utf-8")) or {}
    return not raw.get("services") and not raw.get("tool_endpoints")


def export(out: Path, mirror: Path | None = None, commit: str = COMMIT) -> dict:
    """Write tasks/ and the grading library of `commit` under `out`; returns PIN.json's record."""
    by_task: dict[str, list[tuple[str, str, bool]]] = defaultdict(list)
    written, incomplete = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        src = source(REPO, commit, mirror, Path(tmp))
        for name, obj, x in blobs(src, commit, TASKS):
            if name.count("/") >= 2:
                by_task[name.split("/")[1]].append((name, obj, x))
        for task, files in sorted(by_task.items()):
            lacking = [name for name, obj, _ in files if not has(src, obj)]
            if lacking:
                incomplete[task] = lacking
                continue
            for name, obj, x in files:
                write_blob(src, obj, out / name, x)
            written.append(task)
        for name, obj, x in blobs(src, commit, *LIBRARY):
            if not has(src, obj):
                raise SystemExit(f"{src}: object {obj} of {name} is missing")
            write_blob(src, obj, out / name, x)
    workspace = [t for t in written if (out / TASKS / t / "task.yaml").is_file()
                 and workspace_task(out / TASKS / t / "task.yaml")]
    pin = {"repo": REPO, "commit": commit, "tasks": len(written), "workspace_tasks": workspace,
           "incomplete": incomplete}
    (out / "PIN.json").write_text(json.dumps(pin, indent=1) + "\n")
    return pin


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mirror", type=Path, default=None, help="dir of owner+name/repo git dirs")
    ap.add_argument("--commit", default=COMMIT)
    a = ap.parse_args()
    pin = export(a.out, a.mirror, a.commit)
    print(f"{pin['tasks']} Claw-Eval-Live tasks ({len(pin['workspace_tasks'])} without mock services) of "
          f"{REPO}@{a.commit[:12]} in {a.out / TASKS}; grader root {a.out}"
          + (f"; left out (objects not in the source): {', '.join(pin['incomplete'])}" if pin["incomplete"] else ""))


if __name__ == "__main__":
    main()
