"""docs/cli.md is generated from the app (scripts/cli_docs.py) and must match it; every command has
an example, the same one in `--help` and in docs/cli.md (clawloop/commands/examples.py); help names
types (TEXT, INTEGER, PATH), never typer's <str>/<bool> (#77 item 4).

After changing a command's help or options: .venv/bin/python scripts/cli_docs.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from clawloop.cli import app, type_name, unwrap
from clawloop.commands.examples import EXAMPLES

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("cli_docs", ROOT / "scripts" / "cli_docs.py")
assert _spec and _spec.loader
cli_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cli_docs)

COMMANDS = {" ".join(path): cmd for path, cmd in cli_docs.commands(typer.main.get_command(app))}


def test_docs_cli_md_is_what_the_app_generates() -> None:
    current = cli_docs.DOC.read_text(encoding="utf-8")
    assert cli_docs.MARKER in current
    assert current == cli_docs.render(current), (
        "docs/cli.md differs from the app's commands: run .venv/bin/python scripts/cli_docs.py and commit docs/cli.md")


def test_docs_cli_md_covers_every_command() -> None:
    text = cli_docs.DOC.read_text(encoding="utf-8")
    assert len(COMMANDS) > 20
    missing = [name for name in COMMANDS if f"### clawloop {name}\n" not in text]
    assert not missing, missing


def test_every_command_has_an_example_that_runs_it() -> None:
    assert set(EXAMPLES) == set(COMMANDS), (
        f"without an example: {sorted(set(COMMANDS) - set(EXAMPLES))}; "
        f"examples of no command: {sorted(set(EXAMPLES) - set(COMMANDS))}")
    for name, lines in EXAMPLES.items():
        assert lines and all(line.startswith(f"clawloop {name}") for line in lines), name


@pytest.mark.parametrize("name", ["eval", "tasks validate", "sandbox layers", "version"])
def test_help_ends_with_the_example_and_names_types(name: str) -> None:
    got = CliRunner().invoke(app, [*name.split(), "--help"], env={"COLUMNS": "400"})  # no wrapping
    assert got.exit_code == 0, got.output
    assert EXAMPLES[name][0] in got.output
    assert "<bool>" not in got.output and "<str>" not in got.output and "<path>" not in got.output


def test_type_names() -> None:
    params = {p.name: p for p in COMMANDS["eval"].params}
    assert type_name(params["suites"]) == "PATH"     # a variadic argument: one value's type
    assert type_name(params["agent"]) == "TEXT"
    assert type_name(params["jobs"]) == "INTEGER"
    assert type_name(params["fail_under"]) == "FLOAT"
    assert type_name(params["force"]) == ""          # a flag takes no value
    assert type_name(params["policy_sets"]) == "TEXT"  # repeatable: each value's type


def test_unwrap_joins_hard_line_breaks_but_keeps_paragraphs_and_lists() -> None:
    assert unwrap("One line\nwrapped.\n\n- a\n- b") == "One line wrapped.\n\n- a\n- b"
