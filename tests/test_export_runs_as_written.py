"""Issue #75 D3: a task clawloop writes runs as its files say.

Exported procedural tasks said `FROM ubuntu:24.04` and their test.sh ran `python3 /tests/check.py`;
stock ubuntu:24.04 has no python3, so in Harbor with Docker every benchmarks/synth-heldout task
scored 0 (the bwrap backend, on the host's /usr, passed them). The exporter now installs each
interpreter the task's scripts call, and `missing_interpreters` checks every shipped task.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clawloop.core.tasks.harbor import DEFAULT_IMAGE, HARBOR_KEY, load_harbor_task
from clawloop.core.tasks.harbor_export import export_harbor_task
from clawloop.core.tasks.image_needs import install_line, missing_interpreters, task_dir_missing
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_SUITES = ("synth-heldout", "shell-core")
"""The suites clawloop ships as Harbor directories (synth-heldout is written by its make.py)."""

SHIPPED = sorted(d for s in SHIPPED_SUITES for d in (ROOT / "benchmarks" / s).iterdir()
                 if (d / "task.toml").is_file())

PYTHON_TEST = ("#!/bin/bash\nmkdir -p /logs/verifier\n"
               "if python3 /tests/check.py; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
"""A test.sh as the procedural generators write it: its check is a python script."""
SHELL_TEST = ("#!/bin/bash\nmkdir -p /logs/verifier\n"
              "if [ -f /workspace/out.txt ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
"""A test.sh that needs no interpreter beyond the image's shell."""


def _task(test_sh: str, *, image: str | None = None, solve: str = "touch /workspace/out.txt") -> Task:
    meta = {HARBOR_KEY: {"from": image}} if image else {}
    return Task(instruction="Make /workspace/out.txt.", files={"/workspace/in.txt": FileSpec.of("x\n")},
                env={"LC_ALL": "C"},
                verifier=Verifier(files={"test.sh": FileSpec.of(test_sh, 0o755),
                                         "check.py": FileSpec.of("import os\nassert os.path.exists('/workspace/out.txt')\n")}),
                solution=Solution(steps=[solve]), skill="files", level=1, metadata=meta)


@pytest.mark.parametrize("task_dir", SHIPPED, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_every_shipped_tasks_dockerfile_provides_what_its_scripts_call(task_dir: Path) -> None:
    """Before: all 224 synth-heldout Dockerfiles lacked python3 (shell-core's install it)."""
    assert task_dir_missing(task_dir) == [], f"{task_dir}: its image lacks what test.sh or solve.sh call"


def test_an_exported_task_whose_test_calls_python3_installs_it(tmp_path: Path) -> None:
    """Installed right after FROM (before the task's ENV), and the import reads the task back the
    same: the apt line is satisfied offline and adds no setup."""
    task = _task(PYTHON_TEST)
    out = export_harbor_task(task, tmp_path / "t")
    dockerfile = (out / "environment" / "Dockerfile").read_text()
    assert dockerfile.splitlines()[1:3] == [f"FROM {DEFAULT_IMAGE}", install_line(["python3"])]
    assert task_dir_missing(out) == []
    back = load_harbor_task(out)
    assert (back.files, back.setup, back.workdir, back.env, back.id) == \
        (task.files, task.setup, task.workdir, task.env, task.id)


def test_a_solution_that_calls_python_installs_it(tmp_path: Path) -> None:
    out = export_harbor_task(_task(SHELL_TEST, solve="python -c 'open(\"/workspace/out.txt\", \"w\")'"),
                             tmp_path / "t")
    assert install_line(["python"]) in (out / "environment" / "Dockerfile").read_text()
    assert task_dir_missing(out) == []


@pytest.mark.parametrize(("test_sh", "image"), [(SHELL_TEST, None), (PYTHON_TEST, "python:3.12-slim")])
def test_nothing_is_installed_where_nothing_is_missing(tmp_path: Path, test_sh: str, image: str | None) -> None:
    """A shell-only verifier, or a python base image: the Dockerfile is as before."""
    out = export_harbor_task(_task(test_sh, image=image), tmp_path / "t")
    assert "apt-get" not in (out / "environment" / "Dockerfile").read_text()
    assert task_dir_missing(out) == []


@pytest.mark.parametrize(("dockerfile", "missing"), [
    ("FROM ubuntu:24.04\n", ["python", "python3"]),
    ("FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y \\\n  # comment\n  python3-pip\n", ["python"]),
    ("FROM ubuntu:24.04\nRUN apt-get install -y python3 && ln -s /usr/bin/python3 /usr/bin/python\n", []),
    ("FROM ubuntu:24.04\nRUN apt-get install -y python-is-python3\n", []),
    ("FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620 AS b\n", []),
    ("FROM python:3.12-slim@sha256:ab\n", []),
])
def test_the_check_reads_installs_links_and_base_images(dockerfile: str, missing: list[str]) -> None:
    scripts = ["#!/bin/bash\n# python2 would do\npython3 /tests/check.py\n", "/usr/bin/env python -V"]
    assert missing_interpreters(dockerfile, scripts) == missing


def test_a_mention_in_a_comment_or_a_longer_name_is_no_call() -> None:
    scripts = ["#!/bin/bash\n# runs python3 in Harbor\nls check_python3.py python3.12-venv python3-pip\n"]
    assert missing_interpreters("FROM ubuntu:24.04\n", scripts) == []
