"""Task input from strangers, played as a hostile task author (issue #51, A and B): a pool line
or a downloaded task directory never runs code on the host, and never reads or writes a host
file outside its own directory; `clawloop check` flags what clawloop refuses.

Each test builds the attack on a legitimate fixture, so what changes is only the hostile part.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import orjson
import pytest

from clawloop.artifacts.check import check_path
from clawloop.core.tasks import claw_eval_grading as ceg
from clawloop.core.tasks import claw_eval_live as cel
from clawloop.core.tasks import file_tree
from clawloop.core.tasks.formats import load_suite_any
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.harbor_export import export_harbor_task, export_tasks
from clawloop.core.tasks.pool import read_pool, write_pool
from clawloop.core.tasks.suite import load_suite
from clawloop.core.tasks.task import FileSpec
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[2]
CEL = ROOT / "benchmarks" / "fixtures" / "claw-eval-live"
CEL_TASK = CEL / "tasks" / "CTB_FX01_log_error_count"
WORD_COUNT = ROOT / "tests" / "fixtures" / "harbor" / "word-count"

EVIL_GRADER = """import pathlib
pathlib.Path({mark!r}).write_text("host code ran")


class G:
    def grade(self, messages, dispatches, task, audit_data=None, judge=None):
        return {{"completion": 1.0}}
"""


@pytest.fixture(autouse=True)
def _no_env_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cel.GRADER_ROOT_ENV, raising=False)


def _evil_line(tmp_path: Path, mark: Path) -> dict:
    """A pool line: a plain-looking shell task whose Claw-Eval-Live record names its own grader
    root (any directory) and whose verifier files ship grader.py."""
    line = cel.load_claw_eval_task(CEL_TASK).to_json()
    line.pop("id")
    evil_root = tmp_path / "evil_root"
    evil_root.mkdir()
    line["verifier"]["files"]["grader.py"] = FileSpec.of(EVIL_GRADER.format(mark=str(mark))).model_dump()
    line["metadata"]["claw_eval_live"]["grader_root"] = str(evil_root)
    return line


def _pool(tmp_path: Path, *lines: dict) -> Path:
    p = tmp_path / "pool.jsonl"
    p.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return p


# ------------------------------------------------------------------ A1: grader.py of a pool line
def test_pool_line_grader_never_runs_on_the_host(tmp_path: Path) -> None:
    mark = tmp_path / "pwned"
    [task] = read_pool(_pool(tmp_path, _evil_line(tmp_path, mark)))
    before = list(sys.path)
    with pytest.raises(ceg.GradingError, match="grader_root .*named by the task, not by the user"):
        ceg.grader_root(task)
    assert not mark.exists(), "the record's grader.py ran in the host process"
    assert sys.path == before, "the record's grader_root went on sys.path"


def test_pool_line_grader_is_an_error_in_an_episode(tmp_path: Path) -> None:
    """What `tasks validate`, `eval` and the loop do with the line: the verdict is an error and
    nothing ran on the host (the no-op would have passed with the record's grader)."""
    import sandbox
    from clawloop.core.agent.oracle import run_episode

    if why := sandbox.unavailable_reason("bwrap"):
        pytest.skip(why)
    mark = tmp_path / "pwned"
    [task] = read_pool(_pool(tmp_path, _evil_line(tmp_path, mark)))
    rec = run_episode(task, "noop")
    assert rec.outcome == "error" and "named by the task" in (rec.reason or ""), rec.reason
    assert not mark.exists()


def test_user_named_root_replaces_the_records(tmp_path: Path) -> None:
    """The user's --grader-root is the consent: the line's own root is replaced, never trusted."""
    mark = tmp_path / "pwned"
    pool = _pool(tmp_path, _evil_line(tmp_path, mark))
    [task] = load_suite_any(pool, grader_root=CEL / "_grader_root").tasks
    assert task.metadata["claw_eval_live"]["grader_root"] == str((CEL / "_grader_root").resolve())


def test_check_flags_a_record_grader_root(tmp_path: Path) -> None:
    [finding] = check_path(_pool(tmp_path, _evil_line(tmp_path, tmp_path / "m")))
    assert finding.error is not None and "pool.jsonl:1: metadata.claw_eval_live.grader_root" in finding.error


def test_import_writes_no_grader_root(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clawloop.cli import app

    out = tmp_path / "p.jsonl"
    r = CliRunner().invoke(app, ["tasks", "import", str(CEL), "--format", "claw-eval-live", "--out", str(out),
                                 "--grader-root", str(CEL / "_grader_root")])
    assert r.exit_code == 0, r.output
    assert all(t.metadata["claw_eval_live"]["grader_root"] is None for t in read_pool(out))
    assert check_path(out)[0].error is None


# ------------------------------------------------------- A2: the record smuggled by a Harbor dir
def test_harbor_metadata_json_cannot_set_a_format_record(tmp_path: Path) -> None:
    d = tmp_path / "word-count"
    shutil.copytree(WORD_COUNT, d)
    mark = tmp_path / "pwned"
    (d / "tests" / "grader.py").write_text(EVIL_GRADER.format(mark=str(mark)))
    rec = {"claw_eval_live": {"format": "claw-eval-live", "grader_root": str(tmp_path), "task_yaml": {}}}
    with (d / "task.toml").open("a") as f:
        f.write(f"\n[metadata.clawloop]\nmetadata_json = {json.dumps(json.dumps(rec))}\n")
    with pytest.raises(ClawloopError, match="metadata_json: claw_eval_live: a format record is set only by its own"):
        load_harbor_task(d)
    [item] = load_suite(d).items
    assert item.task is None and "format record" in (item.error or "")
    assert not mark.exists()


def test_export_leaves_format_records_out(tmp_path: Path) -> None:
    """An exported format task imports back (as the plain Harbor task Harbor would run)."""
    [t, *_] = load_suite_any(ROOT / "benchmarks" / "fixtures" / "clawgym").tasks
    back = load_harbor_task(export_harbor_task(t, tmp_path / "x"))
    assert "clawgym" in t.metadata and "clawgym" not in back.metadata
    assert (back.files, back.verifier) == (t.files, t.verifier)


# ------------------------------------------------------------ B3: '../' keys of a record
@pytest.mark.parametrize(("where", "key"), [
    ("solution", "../../escaped-solution"),
    ("solution", "/abs/solve.sh"),
    ("verifier", "a/\0/b"),
    ("environment_files", "../escaped-env"),
    ("environment_dirs", "../../escaped-dir"),
])
def test_path_keys_are_refused_at_load(tmp_path: Path, where: str, key: str) -> None:
    line = load_harbor_task(WORD_COUNT).to_json()
    line.pop("id")
    spec = FileSpec.of("x").model_dump()
    if where in ("solution", "verifier"):
        line[where]["files"][key] = spec
    elif where == "environment_files":
        line["metadata"]["harbor"].setdefault("environment_files", {})[key] = spec
    else:
        line["metadata"]["harbor"]["environment_dirs"] = [key]
    with pytest.raises(ClawloopError, match=r"pool.jsonl:1: .*(files|environment_dirs)"):
        read_pool(_pool(tmp_path, line))
    assert not [p for p in tmp_path.rglob("escaped*")]


@pytest.mark.parametrize("copy_sources", [["/workspace/x"], {"/workspace/x": "../up"}, "nope"])
def test_malformed_copy_sources_are_a_clear_error(tmp_path: Path, copy_sources: object) -> None:
    """A list where a mapping belongs was an AttributeError out of the validator (a traceback)."""
    line = load_harbor_task(WORD_COUNT).to_json()
    line.pop("id")
    line["metadata"]["harbor"]["copy_sources"] = copy_sources
    with pytest.raises(ClawloopError, match=r"pool.jsonl:1: .*copy_sources"):
        read_pool(_pool(tmp_path, line))


def test_writes_never_leave_their_root(tmp_path: Path) -> None:
    root = tmp_path / "out"
    for rel in ("../escaped", "a/../../escaped", "a/\0b"):
        with pytest.raises(ClawloopError, match="nothing is written outside"):
            file_tree.write_tree(root, {rel: FileSpec.of("x")})
    # a link already in the output directory is never written through
    root.mkdir(exist_ok=True)
    (root / "tests").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(ClawloopError, match="not a directory"):
        file_tree.write_tree(root, {"tests/test.sh": FileSpec.of("x")})
    (root / "instruction.md").symlink_to(tmp_path / "victim.txt")
    with pytest.raises(ClawloopError, match="a link is never written through"):
        file_tree.write_under(root, "instruction.md", b"x")
    assert not (tmp_path / "victim.txt").exists() and not list((tmp_path / "elsewhere").iterdir())
    assert not (tmp_path / "escaped").exists()


def test_export_refuses_a_key_that_slipped_past_the_model(tmp_path: Path) -> None:
    """Defence in depth: a record built without validation (model_copy does not validate) still
    cannot make `tasks export` write outside the task's directory."""
    t = load_harbor_task(WORD_COUNT)
    h = {**t.metadata["harbor"], "environment_files": {"../../escaped": FileSpec.of("x").model_dump()}}
    bad = t.model_copy(update={"metadata": {**t.metadata, "harbor": h}})
    with pytest.raises(ClawloopError, match="nothing is written outside"):
        export_tasks([bad], tmp_path / "dirs" / "sub")
    assert not (tmp_path / "dirs" / "escaped").exists() and not (tmp_path / "escaped").exists()


# ------------------------------------------------------------ B4: links in a task directory
def test_symlink_to_a_host_file_is_refused(tmp_path: Path, host_secret: tuple[Path, str]) -> None:
    secret, value = host_secret
    d = tmp_path / "word-count"
    shutil.copytree(WORD_COUNT, d)
    (d / "environment" / "notes.txt").symlink_to(secret)
    with pytest.raises(ClawloopError, match=r"environment/notes.txt: symbolic link out of the task directory"):
        load_harbor_task(d)
    out = tmp_path / "pool.jsonl"
    suite = load_suite(d)
    write_pool(out, suite.tasks)
    assert value not in out.read_text()


@pytest.mark.parametrize("kind", ["dir", "loop", "dangling", "parent", "tests-dir"])
def test_symlinked_dirs_and_loops_are_per_task_errors(tmp_path: Path, kind: str) -> None:
    d = tmp_path / "word-count"
    shutil.copytree(WORD_COUNT, d)
    docs = d / "environment" / "docs"
    host_dir = tmp_path / "host"
    host_dir.mkdir()
    (host_dir / "id_rsa").write_text("PRIVATE")
    if kind == "dir":
        (docs / "conf").symlink_to(host_dir, target_is_directory=True)
    elif kind == "loop":
        (docs / "a").symlink_to(docs / "b")
        (docs / "b").symlink_to(docs / "a")
    elif kind == "dangling":
        (docs / "gone").symlink_to(tmp_path / "nothing")
    elif kind == "parent":
        (docs / "up").symlink_to(docs, target_is_directory=True)
    else:
        shutil.rmtree(d / "tests")
        (d / "tests").symlink_to(host_dir, target_is_directory=True)
    [item] = load_suite(d).items
    assert item.task is None and "symbolic link" in (item.error or ""), item.error
    assert "\n" not in (item.error or "")


def test_links_inside_the_task_dir_still_load(tmp_path: Path) -> None:
    d = tmp_path / "word-count"
    shutil.copytree(WORD_COUNT, d)
    (d / "environment" / "docs" / "same.txt").symlink_to("a.txt")
    t = load_harbor_task(d)
    assert t.files["/app/docs/same.txt"] == t.files["/app/docs/a.txt"]


# --------------------------------------------------- B5: Claw-Eval-Live files above the task
def test_claw_eval_files_never_come_from_above_the_task(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    (home / "tasks").mkdir()  # what made the old lookup call home the project root
    d = home / "x"
    shutil.copytree(CEL_TASK, d)
    yaml_text = (d / "task.yaml").read_text().replace("  - logs/app.log", "  - logs/app.log\n  - .ssh/id_rsa")
    (d / "task.yaml").write_text(yaml_text)
    with pytest.raises(ClawloopError, match=r"sandbox_files\[1\]: .ssh/id_rsa not found"):
        cel.load_claw_eval_task(d)
    # a root the user names is where such files are found (the benchmark's checkout)
    t = cel.load_claw_eval_task(d, grader_root=home)
    assert t.files["/workspace/.ssh/id_rsa"].content == "PRIVATE KEY"


def test_claw_eval_file_linked_out_is_refused(tmp_path: Path, host_secret: tuple[Path, str]) -> None:
    d = tmp_path / "x"
    shutil.copytree(CEL_TASK, d)
    (d / "logs" / "app.log").unlink()
    (d / "logs" / "app.log").symlink_to(host_secret[0])
    with pytest.raises(ClawloopError, match="symbolic link out of the task directory"):
        cel.load_claw_eval_task(d)


# ---------------------------------------------------------------------- B6: size caps
def test_oversized_file_is_refused_before_reading(tmp_path: Path) -> None:
    d = tmp_path / "word-count"
    shutil.copytree(WORD_COUNT, d)
    big = d / "environment" / "docs" / "big.bin"
    with big.open("wb") as f:  # sparse: 64 MiB on stat, nothing on disk
        f.truncate(64 << 20)
    [item] = load_suite(d).items
    assert item.task is None and f"{big}: {64 << 20} bytes, more than a task file may have" in (item.error or "")


def test_task_total_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_tree, "MAX_TASK_BYTES", 4096)
    d = tmp_path / "word-count"
    shutil.copytree(WORD_COUNT, d)
    for i in range(3):
        (d / "environment" / "docs" / f"part{i}.txt").write_text("y" * 2000)
    with pytest.raises(ClawloopError, match=r"part\d.txt: the task's files pass"):
        load_harbor_task(d)


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    d = tmp_path / "word-count"
    shutil.copytree(WORD_COUNT, d)
    os.mkfifo(d / "environment" / "docs" / "pipe")
    with pytest.raises(ClawloopError, match="pipe: not a regular file"):
        load_harbor_task(d)
