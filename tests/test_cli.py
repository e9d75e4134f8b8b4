"""The command line: fast start-up, one-line errors."""

import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def test_cli_import_stays_light() -> None:
    code = ("import sys, clawloop.cli; heavy = [m for m in ('torch', 'transformers', 'trl', 'duckdb', "
            "'datasets', 'vllm') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_command_group_is_registered() -> None:
    out = subprocess.run([str(BIN / "clawloop"), "--help"], capture_output=True, text=True, check=True).stdout
    for name in ("eval", "diagnose", "train", "check", "report", "sandbox", "tasks", "model"):
        assert name in out


def test_python_dash_m_runs_the_same_command_line() -> None:
    for module in ("clawloop", "clawloop.cli"):
        out = subprocess.run([sys.executable, "-m", module, "version"], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == subprocess.run([str(BIN / "clawloop"), "version"], capture_output=True,
                                                    text=True, check=True).stdout.strip() != ""


def test_check_on_missing_runs_is_one_line(tmp_path: Path) -> None:
    p = subprocess.run([str(BIN / "clawloop"), "check", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.startswith("error: ") and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
