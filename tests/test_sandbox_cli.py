"""`clawloop sandbox ...` through the installed entry point, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLAWLOOP = str(Path(sys.executable).with_name("clawloop"))


def clawloop(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLAWLOOP, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_run_prints_output_and_propagates_exit_code() -> None:
    r = clawloop("sandbox", "run", "--", "echo", "hello world")
    assert (r.returncode, r.stdout) == (0, "hello world\n"), r.stderr
    r = clawloop("sandbox", "run", "echo $((6*7)) | tee /tmp/x; exit 3")
    assert (r.returncode, r.stdout) == (3, "42\n")


def test_run_timeout_exits_124() -> None:
    r = clawloop("sandbox", "run", "--timeout", "1", "--", "sleep", "30")
    assert r.returncode == 124
    assert "timed out" in r.stderr


def test_run_copies_the_workspace_dir(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("from host\n")
    r = clawloop("sandbox", "run", "--workspace", str(tmp_path), "--", "cat in.txt; touch new")
    assert r.stdout == "from host\n"
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--backend", "nope", "--", "true"], None, "unknown backend 'nope'"),
    (["--workspace", "/nonexistent/dir", "--", "true"], None, "--workspace /nonexistent/dir"),
    (["--", "true"], {"CLAWLOOP_BWRAP": "/nonexistent/bwrap"}, "bubblewrap not found"),
    (["--", "true"], {"CLAWLOOP_RUNTIME": "/nonexistent/venv"}, "CLAWLOOP_RUNTIME"),
])
def test_bad_input_is_one_line_error(args: list[str], env: dict[str, str] | None, message: str) -> None:
    r = clawloop("sandbox", "run", *args, env=env)
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_doctor_reports_each_backend() -> None:
    r = clawloop("sandbox", "doctor")
    lines = r.stdout.splitlines()
    assert any(line.startswith("bwrap") and "works" in line for line in lines), r.stdout
    assert any(line.startswith("local") and "NOT isolated" in line for line in lines)
    assert any(line.startswith("docker") for line in lines)
    assert r.returncode == 0
