"""Harbor's environment/docker-compose.yaml (issue #75 D, the public Harbor suite).

Harbor merges environment/docker-compose.yaml (that name only, never .yml) over its own compose
file: a task may add services (an MCP server, a database) and build `main` from the task dir
(`build: {context: .., dockerfile: environment/Dockerfile}`, paths relative to environment/).
Such a task needs its image: its COPY of `environment/...` is fine under Docker and is not the
task's fault. A .yml file Harbor never reads changes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.suite import load_suite
from clawloop.errors import ClawloopError

FIXTURE = Path(__file__).parent / "fixtures" / "harbor-offline" / "compose-sidecar"


def _copy(tmp_path: Path) -> Path:
    task = tmp_path / "compose-task"
    shutil.copytree(FIXTURE, task)
    return task


def test_a_task_with_a_sidecar_built_from_the_task_dir_needs_its_image() -> None:
    """The public feature-engineering task's shape (main from context `..`, an MCP sidecar): was
    unloadable, "COPY source ... is not in the build context: the task's fault"."""
    task = load_harbor_task(FIXTURE)
    assert task.needs_image == "multi-container environment (main, lines)"
    h = task.metadata["harbor"]
    assert h["dockerfile"].startswith("FROM python:3.12-slim")  # the original kept for the docker backend
    assert {"docker-compose.yaml", "app/data.txt"} <= set(h["environment_files"])


def test_an_eval_suite_skips_it_instead_of_blaming_the_task(tmp_path: Path) -> None:
    _copy(tmp_path)
    item, = load_suite(tmp_path).items
    assert item.error is None and item.task is not None and item.task.needs_image


def test_main_built_from_the_task_dir_alone_needs_its_image(tmp_path: Path) -> None:
    task = _copy(tmp_path)
    (task / "environment" / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build:\n      context: ..\n      dockerfile: environment/Dockerfile\n")
    assert "builds main from the context '..', not environment/" in load_harbor_task(task).needs_image


def test_a_compose_file_that_keeps_harbors_context_changes_nothing(tmp_path: Path) -> None:
    task = _copy(tmp_path)
    (task / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\nCOPY app/data.txt /app/\n")
    (task / "environment" / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build:\n      context: .\n    environment:\n      X: '1'\n")
    t = load_harbor_task(task)
    assert t.needs_image is None and "/app/data.txt" in t.files


def test_harbor_never_reads_docker_compose_yml(tmp_path: Path) -> None:
    """A .yml with two services (or merge-conflict markers, as a public task has) was taken for
    Harbor's file: the task was skipped as multi-container, or its COPY error excused."""
    task = _copy(tmp_path)
    env = task / "environment"
    (env / "docker-compose.yaml").rename(env / "docker-compose.yml")
    (env / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\nCOPY app/data.txt /app/\n")
    t = load_harbor_task(task)
    assert t.needs_image is None and "/app/data.txt" in t.files
    (env / "docker-compose.yml").write_text("services:\n<<<<<<< Updated upstream\n  main: {}\n")
    (env / "Dockerfile").write_text("FROM python:3.12-slim\nCOPY src/ /app/src/\n")
    with pytest.raises(ClawloopError, match="COPY source 'src/' is not in the build context.*the task's fault"):
        load_harbor_task(task)


def test_other_dockerfile_refusals_still_stand_with_a_compose_file(tmp_path: Path) -> None:
    """Only "not in the build context" depends on the context; an unknown instruction does not."""
    task = _copy(tmp_path)
    (task / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nFROBNICATE x\n")
    with pytest.raises(ClawloopError, match="unknown instruction"):
        load_harbor_task(task)
