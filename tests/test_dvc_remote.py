"""Artifacts across machines: a refined task set travels through a second DVC remote.

In a scratch "lab" repository a stage refines a pool with `clawloop tasks validate` (bwrap
sandboxes, as the loop's validate stage); then, as on another machine: `dvc remote add` a directory,
`dvc push`, `git clone` + `dvc pull` gives the same bytes, and a third repository
`dvc import`s the refined set (and `dvc update` follows the lab when it refines again). The
README's "Remote and transfer" shows the same commands.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clawloop.core.tasks.pool import read_pool, write_pool
from clawloop.phases.synthesize.procedural.generate import synthesize
from clawloop.phases.synthesize.steering import Plan

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GIT_ID = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@localhost",
          "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@localhost"}


def _run(args: list[str], cwd: Path) -> str:
    env = {**os.environ, **GIT_ID, "PATH": f"{BIN}:{os.environ['PATH']}", "CLAWLOOP_RUNTIME": str(ROOT / ".runtime"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p.stdout


def _pool(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_pool(path, synthesize(Plan({("files", 1): 3, ("text_search", 1): 3}), seed=seed))


def test_refined_task_set_travels_by_a_second_remote(tmp_path: Path) -> None:
    if not (BIN / "dvc").exists():
        pytest.skip("dvc is not installed in this venv")
    if not (ROOT / ".runtime" / "bin").is_dir():
        pytest.skip("no task runtime: run scripts/setup.sh")
    lab, store, clone, other = (tmp_path / n for n in ("lab", "second-remote", "clone", "other"))
    lab.mkdir()
    _run(["git", "init", "-q"], lab)
    _run(["dvc", "init", "-q"], lab)
    _pool(lab / "pool" / "pool.jsonl", seed=0)
    _run(["dvc", "add", "-q", "pool"], lab)
    _run(["dvc", "stage", "add", "-q", "-n", "refine", "-d", "pool", "-o", "refined",
          "clawloop tasks validate pool/pool.jsonl --out refined/valid.jsonl --rejections refined/rejections.json "
          "--no-heldout"], lab)
    _run(["dvc", "repro", "-q"], lab)
    refined = (lab / "refined" / "valid.jsonl").read_bytes()
    assert len(read_pool(lab / "refined" / "valid.jsonl")) >= 4
    _run(["dvc", "remote", "add", "-d", "second", str(store)], lab)  # an absolute path: clones resolve it
    _run(["git", "add", "-A"], lab)
    _run(["git", "commit", "-qm", "refined task set"], lab)
    _run(["dvc", "push", "-q"], lab)
    assert any(p.is_file() for p in store.rglob("*")), "nothing pushed"

    # Another machine: clone the code, pull the artifacts, nothing to recompute.
    _run(["git", "clone", "-q", str(lab), str(clone)], tmp_path)
    _run(["dvc", "pull", "-q"], clone)
    assert (clone / "refined" / "valid.jsonl").read_bytes() == refined
    assert "up to date" in _run(["dvc", "status"], clone)

    # Another project: import the refined set, then follow the lab when it refines again.
    other.mkdir()
    _run(["git", "init", "-q"], other)
    _run(["dvc", "init", "-q"], other)
    _run(["dvc", "import", "-q", str(lab), "refined", "-o", "from-lab"], other)
    assert (other / "from-lab" / "valid.jsonl").read_bytes() == refined
    assert (other / "from-lab.dvc").is_file()
    _pool(lab / "pool" / "pool.jsonl", seed=1)
    _run(["dvc", "add", "-q", "pool"], lab)
    _run(["dvc", "repro", "-q"], lab)
    _run(["git", "commit", "-qam", "refined again"], lab)
    _run(["dvc", "push", "-q"], lab)
    _run(["dvc", "update", "-q", "from-lab.dvc"], other)
    again = (other / "from-lab" / "valid.jsonl").read_bytes()
    assert again == (lab / "refined" / "valid.jsonl").read_bytes() != refined
