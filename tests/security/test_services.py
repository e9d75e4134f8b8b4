"""Services and data (issue #51, D): what `clawloop view`, `report`, `serve` and `eval --agent
model` do with a careless option or with artifacts that came from a stranger (a DVC remote).

Each test plays the attacker: a `--out` that names the user's runs, a web page posting to the
local server, an episodes.jsonl or metrics.json shaped to crash the renderer, a pickled
checkpoint. The defence is one line naming the file and the field, a non-zero exit, no
traceback, and nothing deleted.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clawloop.errors import ClawloopError
from clawloop.io import write_jsonl
from clawloop.viewer import write_viewer
from clawloop.viewer.write import MARKER

BIN = Path(sys.executable).parent

RECORD = {"task_id": "t1", "name": "hello", "suite": "shell-core", "skill": "files", "level": 1, "agent": "noop",
          "outcome": "failed", "reward": 0.0, "reason": None, "duration_s": 0.1, "verifier_output": "FAILED x",
          "steps": [{"command": "true", "exit_code": 0, "output": "", "timed_out": False, "duration_s": 0.0}]}


def clawloop(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The installed CLI, as a user runs it (its error handling is the thing under test)."""
    return subprocess.run([str(BIN / "clawloop"), *map(str, args)], capture_output=True, text=True, timeout=120)


def refused(p: subprocess.CompletedProcess[str], *words: str) -> None:
    """A one-line error that names `words`, a non-zero exit, no traceback."""
    assert p.returncode != 0, p.stdout
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.fixture()
def records(tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "eval" / "episodes.jsonl", [RECORD])
    return tmp_path / "eval"


# ------------------------------------------------------------------ 12: view --out deletes DIR
def test_view_out_does_not_wipe_a_directory_it_did_not_write(records: Path, tmp_path: Path) -> None:
    """`clawloop view EVAL --out runs` deleted the runs; now it refuses and keeps every byte."""
    runs = tmp_path / "runs"
    (runs / "iter-0").mkdir(parents=True)
    (runs / "iter-0" / "metrics.json").write_text("{}")
    refused(clawloop("view", records, "--out", runs), str(runs), "refusing")
    assert (runs / "iter-0" / "metrics.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval", "runs"]  # no build left behind

    # a file, and a link to a directory, are refused too (the link's target is kept)
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ClawloopError, match="not a directory"):
        write_viewer([("g", records)], tmp_path / "notes.txt")
    (tmp_path / "link").symlink_to(runs)
    with pytest.raises(ClawloopError, match="symbolic link"):
        write_viewer([("g", records)], tmp_path / "link")
    assert (tmp_path / "notes.txt").read_text() == "mine" and (runs / "iter-0" / "metrics.json").exists()


def test_view_out_replaces_its_own_viewer(records: Path, tmp_path: Path) -> None:
    """A missing or empty directory is written; the viewer's own directory (its marker, or only
    viewer files: one written before the marker) is replaced; a file added to it makes it foreign
    only when the marker is gone."""
    site = tmp_path / "site"
    site.mkdir()
    write_viewer([("g", records)], site)  # empty: fine
    assert (site / MARKER).is_file() and (site / "index.html").is_file()
    (site / "data" / "chunk-0099.js").write_text("stale")
    write_viewer([("g", records)], site)  # its own: replaced, the stale chunk gone
    assert not (site / "data" / "chunk-0099.js").exists() and (site / MARKER).is_file()
    (site / MARKER).unlink()
    write_viewer([("g", records)], site)  # only viewer files: an older viewer, replaced
    (site / MARKER).unlink()
    (site / "keep.txt").write_text("x")
    with pytest.raises(ClawloopError, match="keep.txt"):
        write_viewer([("g", records)], site)
    assert (site / "keep.txt").read_text() == "x"
    write_viewer([("g", records)], tmp_path / "new" / "site")  # missing: made
    assert (tmp_path / "new" / "site" / MARKER).is_file()
