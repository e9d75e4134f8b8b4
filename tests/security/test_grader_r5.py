"""Issue #75 C1: a benchmark's grader runs inside the verifier sandbox, never on the host.

Naming a grader root (`--grader-root`, $CLAWLOOP_GRADER_ROOT) used to exec the record's own
grader.py, and import the root's library, in the host process. Now both are copied into the
task's verifier files and run there with the sandbox's python: each canary below is a host path
the grading code writes when it runs; it must never appear on the host, and the grade must come
from inside the sandbox (the grader sees itself at /tests/grader.py).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from clawloop.core.agent.oracle import run_episode
from clawloop.core.tasks import claw_eval_grading as ceg
from clawloop.core.tasks import claw_eval_live as cel
from clawloop.errors import ClawloopError

from .conftest import available

ROOT = Path(__file__).resolve().parents[2]
CEL_TASK = ROOT / "benchmarks" / "fixtures" / "claw-eval-live" / "tasks" / "CTB_FX01_log_error_count"
LIBRARY_PACKAGE = "canary_grading_lib"

CANARY_GRADER = """import os
import pathlib

import {package}

mark = pathlib.Path({mark!r})
mark.parent.mkdir(parents=True, exist_ok=True)
mark.write_text("grader.py ran here")


class G:
    def grade(self, messages, dispatches, task, audit_data=None, judge=None, env_snapshot=None):
        return {{"completion": 1.0, "grader_file": __file__, "library_file": {package}.__file__}}
"""
CANARY_LIBRARY = """import pathlib

mark = pathlib.Path({mark!r})
mark.parent.mkdir(parents=True, exist_ok=True)
mark.write_text("the grading library ran here")
"""


@pytest.fixture(autouse=True)
def _no_env_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cel.GRADER_ROOT_ENV, raising=False)


def canary_task_and_root(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """(task dir, grader root, grader.py's canary, the library's canary): a Claw-Eval-Live task
    whose grader.py imports a package of the user's grader root, each writing its canary."""
    marks = tmp_path / "host-canaries"
    grader_mark, library_mark = marks / "grader", marks / "library"
    task = tmp_path / "tasks" / CEL_TASK.name
    shutil.copytree(CEL_TASK, task)
    (task / "grader.py").write_text(CANARY_GRADER.format(package=LIBRARY_PACKAGE, mark=str(grader_mark)))
    root = tmp_path / "grader-root"
    (root / "src" / LIBRARY_PACKAGE).mkdir(parents=True)
    (root / "src" / LIBRARY_PACKAGE / "__init__.py").write_text(CANARY_LIBRARY.format(mark=str(library_mark)))
    (root / "tasks").mkdir()
    (root / "tasks" / "task.yaml").write_text("task_id: x\n")  # a checkout's tasks: never copied
    return task, root, grader_mark, library_mark


def assert_graded_in_the_sandbox(rec: object, *marks: Path) -> None:
    assert not any(m.exists() for m in marks), "the benchmark's grading code ran on the host"
    assert LIBRARY_PACKAGE not in sys.modules, "the grading library was imported in the host process"
    assert (rec.outcome, rec.reward) == ("passed", 1.0), rec.reason  # type: ignore[attr-defined]
    scores = rec.scores  # type: ignore[attr-defined]
    assert scores["grader_file"] == "/tests/grader.py"
    assert scores["library_file"] == f"/tests/grader_root/src/{LIBRARY_PACKAGE}/__init__.py"


def test_named_grader_root_grades_in_the_sandbox(tmp_path: Path) -> None:
    available("bwrap")
    task, root, *marks = canary_task_and_root(tmp_path)
    before = list(sys.path)
    rec = run_episode(cel.load_claw_eval_task(task, grader_root=root), "noop", "bwrap")
    assert_graded_in_the_sandbox(rec, *marks)
    assert sys.path == before, "the grader root went on the host's sys.path"


def test_env_grader_root_grades_in_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    available("bwrap")
    task, root, *marks = canary_task_and_root(tmp_path)
    monkeypatch.setenv(cel.GRADER_ROOT_ENV, str(root))
    rec = run_episode(cel.load_claw_eval_task(task), "noop", "bwrap")
    assert_graded_in_the_sandbox(rec, *marks)


def test_only_the_library_is_copied(tmp_path: Path) -> None:
    """The root's packages and modules go in, not the rest of a checkout; a link out of the root is
    refused, never read."""
    _, root, *_ = canary_task_and_root(tmp_path)
    (root / "helpers.py").write_text("X = 1\n")
    assert set(ceg.grader_library(root)) == {f"grader_root/src/{LIBRARY_PACKAGE}/__init__.py",
                                            "grader_root/helpers.py"}
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret")
    os.symlink(secret, root / "src" / LIBRARY_PACKAGE / "data.txt")
    with pytest.raises(ClawloopError):
        ceg.grader_library(root)
