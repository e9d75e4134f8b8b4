"""What clawloop writes on the host from a task (issue #75, C2), played as a hostile pool author
or a local user who shares the output directory: `tasks export` of a pool never writes a set-uid,
set-gid or sticky file (a root-owned 6755 shell is root for anyone), and never follows a link it
did not make anywhere under its output directory.

The defence is one line naming the file and the field, a non-zero exit, and nothing written.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from clawloop.core.tasks import file_tree
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.harbor_export import export_harbor_task, export_tasks
from clawloop.core.tasks.pool import read_pool
from clawloop.core.tasks.suite import load_suite
from clawloop.core.tasks.task import FileSpec, Task
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[2]
WORD_COUNT = ROOT / "tests" / "fixtures" / "harbor" / "word-count"
BIN = Path(sys.executable).parent


def _line(**modes: int) -> dict:
    """word-count as a pool line, with the verifier's files at the given modes."""
    line = load_harbor_task(WORD_COUNT).to_json()
    line.pop("id")
    for name, mode in modes.items():
        line["verifier"]["files"][name.replace("_", ".")]["mode"] = mode
    return line


def _special_files(root: Path) -> list[str]:
    """Files under `root` with a set-uid, set-gid or sticky bit (or links)."""
    return [str(p) for p in root.rglob("*")
            if p.is_symlink() or os.lstat(p).st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX)]


# ---------------------------------------------------------------- FileSpec.mode: permission bits
@pytest.mark.parametrize("mode", [0o6755, 0o4755, 0o7777, 0o1777, 2**40, -1], ids=oct)
def test_export_of_a_pool_never_writes_setuid_files(tmp_path: Path, mode: int) -> None:
    """`tasks export` of a pool line whose test.sh is mode 6755 wrote a set-uid file (root's, when
    root exports): the line is refused with its file:line and field, and nothing is written."""
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps(_line(test_sh=mode)) + "\n")
    out = tmp_path / "out"
    p = subprocess.run([str(BIN / "clawloop"), "tasks", "export", str(pool), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    [err] = p.stderr.strip().splitlines()
    assert err.startswith(f"error: {pool}:1: verifier.files.test.sh.mode: ") and "permission bits" in err, err
    assert not out.exists()


def test_a_spec_that_skipped_validation_is_still_refused(tmp_path: Path) -> None:
    """Defence in depth: model_copy does not validate, so a Dockerfile's `COPY --chmod` (or any
    code) can build a spec with mode 0o6755; the task, export and write_under each refuse it."""
    t = load_harbor_task(WORD_COUNT)
    evil = t.verifier.files["test.sh"].model_copy(update={"mode": 0o6755})
    with pytest.raises(ValueError, match=r"test.sh.mode: 0o6755 is not permission bits"):
        Task.model_validate({**t.model_dump(exclude={"id"}), "verifier": {"files": {"test.sh": evil}}})
    bad = t.model_copy(update={"verifier": t.verifier.model_copy(update={"files": {"test.sh": evil}})})
    good = load_harbor_task(WORD_COUNT).model_copy(update={"metadata": {}})
    out = tmp_path / "out"
    with pytest.raises(ClawloopError, match=r"tests/test.sh: mode 0o6755 is not permission bits"):
        export_tasks([good, bad], out)
    assert not out.exists() or not any(out.iterdir())  # all or nothing: the good task is not written either
    with pytest.raises(ClawloopError, match=r"x.sh: mode 0o4755 is not permission bits"):
        file_tree.write_under(tmp_path / "w", "x.sh", b"#!/bin/sh\n", 0o4755)
    assert not (tmp_path / "w" / "x.sh").exists()


def test_a_dockerfile_chmod_with_setuid_is_refused_at_import(tmp_path: Path) -> None:
    """`COPY --chmod=4755` in a downloaded task's Dockerfile gave its files mode 4755, which
    `tasks import --harbor` then wrote on the host: now the task does not load, in one line."""
    d = tmp_path / "word-count"
    import shutil

    shutil.copytree(WORD_COUNT, d)
    df = d / "environment" / "Dockerfile"
    df.write_text(df.read_text().replace("COPY docs/ /app/docs/", "COPY --chmod=4755 docs/ /app/docs/"))
    [item] = load_suite(d).items
    assert item.task is None and "mode: 0o4755 is not permission bits" in (item.error or ""), item.error
    assert "\n" not in (item.error or "")


def test_ordinary_modes_still_round_trip(tmp_path: Path) -> None:
    """Permission bits are written as they were: 700 for test.sh (711: export adds x), 600 and 000 in the image."""
    line = _line(test_sh=0o700)
    line["files"]["/workspace/secret"] = FileSpec.of("k", 0o600).model_dump()
    line["files"]["/workspace/locked"] = FileSpec.of("k", 0o000).model_dump()
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps(line) + "\n")
    [t] = read_pool(pool)
    [out] = export_tasks([t], tmp_path / "out")
    assert load_harbor_task(out, source=t.source).files == t.files
    assert os.stat(out / "tests" / "test.sh").st_mode & 0o7777 == 0o711  # export adds x for all
    assert "COPY --chmod=600 " in (out / "environment" / "Dockerfile").read_text()
    assert not _special_files(tmp_path / "out")


# ---------------------------------------------------------------- export: links under OUT
@pytest.mark.parametrize("planted", ["word-count/tests", "word-count", "word-count/environment",
                                     "word-count/solution", "word-count/task.toml", "word-count/tests/test.sh"])
def test_export_never_follows_a_link_planted_under_out(tmp_path: Path, planted: str) -> None:
    """Another local user (or an earlier task) leaves `OUT/<name>/tests -> /elsewhere`: export
    wrote the verifier's files through it, outside OUT. Now any link below OUT is refused,
    nothing is written through it, and the link itself is left alone."""
    t = load_harbor_task(WORD_COUNT)
    out = tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / "victim"
    victim.write_text("mine\n")
    link = out / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim if planted.endswith((".toml", ".sh")) else elsewhere)
    with pytest.raises(ClawloopError, match="link"):
        export_tasks([t], out)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["victim"] and victim.read_text() == "mine\n"
    assert link.is_symlink()
    # the single-task entry point holds the same line
    with pytest.raises(ClawloopError, match="link"):
        export_harbor_task(t, out / "word-count")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["victim"] and victim.read_text() == "mine\n"


def test_export_into_its_own_output_again_replaces_files(tmp_path: Path) -> None:
    """A directory export made itself is written again (files replaced, nothing else touched)."""
    t = load_harbor_task(WORD_COUNT)
    [first] = export_tasks([t], tmp_path / "out")
    (first / "instruction.md").write_text("stale")
    [again] = export_tasks([t], tmp_path / "out")
    assert again == first and (again / "instruction.md").read_text() == t.instruction
