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
    assert "clawloop tasks validate:" in text and "[--report] (hidden)" in text  # the old name still parses
