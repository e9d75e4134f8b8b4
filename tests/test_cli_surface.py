"""The command line is an interface people script against: its commands and flags are snapshotted
in tests/fixtures/cli-surface.txt, so that every change to them is deliberate. A renamed flag keeps
its old name as a hidden alias that warns (clawloop.commands.renamed); hidden names are listed too.

After a deliberate change: CLAWLOOP_UPDATE_CLI_SURFACE=1 .venv/bin/pytest tests/test_cli_surface.py
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer.main

from clawloop.cli import app

SNAPSHOT = Path(__file__).parent / "fixtures" / "cli-surface.txt"


def surface(cmd: Any, path: str = "clawloop") -> list[str]:
    """One line per command: its path, then its arguments and option names (hidden ones marked)."""
    if hasattr(cmd, "commands"):  # a group (typer vendors its click: duck-typed)
        return [line for name in sorted(cmd.commands) for line in surface(cmd.commands[name], f"{path} {name}")]
    words = []
    for p in cmd.params:
        if p.param_type_name == "argument":
            words.append(p.name.upper() + ("..." if p.nargs == -1 else ""))
        else:
            names = "/".join([*p.opts, *p.secondary_opts])
            words.append(f"[{names}]" + (" (hidden)" if getattr(p, "hidden", False) else ""))
    return [f"{path}: {' '.join(words)}"]


def test_the_public_cli_surface_changes_only_on_purpose() -> None:
    lines = surface(typer.main.get_command(app))
    text = "\n".join(lines) + "\n"
    if os.environ.get("CLAWLOOP_UPDATE_CLI_SURFACE"):
        SNAPSHOT.write_text(text)
    assert SNAPSHOT.read_text() == text, (
        "the command line changed; if on purpose (a renamed flag keeps a hidden alias: clawloop.commands.renamed), "
        "rerun with CLAWLOOP_UPDATE_CLI_SURFACE=1 and commit tests/fixtures/cli-surface.txt")
    commands = dict(line.split(": ", 1) for line in lines if ": " in line)
    for command, old in (("tasks validate", "--report"), ("tasks synth", "--report"), ("diagnose", "--previous")):
        assert f"[{old}] (hidden)" in commands[f"clawloop {command}"]  # the old name still parses (docs/names.md)


def test_renamed_stage_flags_still_parse_and_warn(capsys) -> None:  # noqa: ANN001
    """docs/names.md: an old stage flag (a dvc.lock, a script) stores into the new one with one warning."""
    from clawloop.artifacts.stage import renamed_flag, stage_parser

    ap = stage_parser(suites=True)
    renamed_flag(ap, "--checkpoint", "--policy", required=True, type=Path, help="the checkpoint to evaluate")
    renamed_flag(ap, "--previous-diagnosis", "--previous", type=Path)
    new = ap.parse_args(["--iteration", "1", "--checkpoint", "c", "--previous-diagnosis", "d", "--out", "o"])
    assert capsys.readouterr().err == ""
    old = ap.parse_args(["--iteration", "1", "--policy", "c", "--previous", "d", "--out", "o"])
    assert vars(old) == vars(new) and old.checkpoint == Path("c") and old.previous_diagnosis == Path("d")
    assert capsys.readouterr().err.splitlines() == [
        "warning: --policy is now --checkpoint; the old name will go (docs/names.md)",
        "warning: --previous is now --previous-diagnosis; the old name will go (docs/names.md)"]
    assert "--policy" not in ap.format_help()


def test_renamed_cli_flags_still_parse_and_warn(tmp_path: Path) -> None:
    """`tasks synth --report` is `--diagnosis` now: the old name still steers, with one warning."""
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, ["tasks", "synth", "--n", "3", "--report", str(tmp_path / "missing.json"),
                                   "--routine", "proposer", "--model", "m", "--out", str(tmp_path / "p.jsonl")])
    assert "warning: --report is now --diagnosis" in res.output
    assert "--diagnosis: " in str(res.exception) and "no such file" in str(res.exception)
