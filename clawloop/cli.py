"""The clawloop command line: `clawloop --help`.

Every command module registers on the apps of `clawloop.commands`; bad input raises
ClawloopError (or SandboxError), printed here as one line with a non-zero exit. Help is assembled
here too: each command's examples (clawloop.commands.examples) close its `--help`, option types are
shown by their names (TEXT, INTEGER, PATH; none for a flag), and hard-wrapped docstrings are joined.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_name

from clawloop import __version__
from clawloop.commands import app
from clawloop.commands.examples import epilog
from clawloop.errors import ClawloopError, printable
from sandbox.base import SandboxError

# Command modules, each owning one area; imported for their registrations.
_COMMAND_MODULES = [
    "sandbox_cmd",   # clawloop sandbox run|doctor|build-image|reap|layers
    "tasks_cmd",     # clawloop tasks schema|validate|import|export|probe
    "eval_cmd",      # clawloop eval
    "synth_cmd",     # clawloop tasks synth
    "model_cmd",     # clawloop model init|info|gguf
    "diagnose_cmd",  # clawloop diagnose
    "train_cmd",     # clawloop train
    "loop_cmd",      # clawloop check|report|view|compare
    "serve_cmd",     # clawloop serve
]
for _name in _COMMAND_MODULES:
    importlib.import_module(f"clawloop.commands.{_name}")

_TYPE_NAMES = {str: "TEXT", int: "INTEGER", float: "FLOAT", bool: "BOOLEAN", Path: "PATH"}


def type_name(param: Any) -> str:
    """What an option or argument takes, as help and docs/cli.md show it: TEXT, INTEGER, FLOAT, PATH,
    the choices of an Enum (a|b), "" for a flag. A repeatable option or a variadic argument shows
    the type of one value."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    desc = getattr(param, "type_descriptor", None)
    if desc is None:
        return "TEXT"
    annotation = desc.annotation
    if get_origin(annotation) in (list, tuple) and get_args(annotation):
        annotation = get_args(annotation)[0]
    if desc.is_choice:
        return "|".join(str(c.value if isinstance(c, Enum) else c) for c in desc.choices or ())
    return _TYPE_NAMES.get(annotation, getattr(annotation, "__name__", str(annotation)).upper())


def unwrap(text: str | None) -> str | None:
    """A docstring's hard line breaks joined within each paragraph (the terminal wraps it again);
    lines that start a list item ("- ", "* ") or are indented stay on their own."""
    if not text:
        return text
    paragraphs = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines = para.split("\n")
        out = [lines[0]]
        for line in lines[1:]:
            if para.startswith("\b") or line[:1] in ("-", "*", " ", "\t", ""):
                out.append(line)
            else:
                out[-1] += " " + line
        paragraphs.append("\n".join(out))
    return "\n\n".join(paragraphs)


def _name_types(command: Any, ctx: Any) -> None:
    """Show each parameter's type_name in help in place of typer's <str>, <bool>, <list[Path]>."""
    for param in command.get_params(ctx):
        shown = type_name(param) or None
        param.display_type_rich = lambda ctx=None, shown=shown: shown


class _Help:
    """What our commands and groups add to typer's: unwrapped help text, real type names."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["help"] = unwrap(kwargs.get("help"))
        super().__init__(*args, **kwargs)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _name_types(self, ctx)
        super().format_help(ctx, formatter)  # type: ignore[misc]


class _Command(_Help, TyperCommand):
    pass


class _Group(_Help, TyperGroup):
    pass


def _assemble(typer_app: typer.Typer, path: tuple[str, ...] = ()) -> None:
    """Every command of `typer_app` and its groups: our help classes, its examples as the epilog."""
    for info in typer_app.registered_commands:
        name = info.name or get_command_name(info.callback.__name__)  # type: ignore[union-attr]
        if info.cls in (None, TyperCommand):  # typer fills in its own class
            info.cls = _Command
        info.epilog = info.epilog or epilog(" ".join((*path, name)))
    for group in typer_app.registered_groups:
        group.cls = _Group
        if group.typer_instance is not None:
            _assemble(group.typer_instance, (*path, group.name))


def main() -> None:
    """Entry point: run the app, turning expected errors into one-line messages."""
    try:
        app()
    except (ClawloopError, SandboxError) as e:
        print(f"error: {printable(e)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


@app.command()
def version() -> None:
    """Print the version."""
    print(__version__)


app.info.cls = _Group
_assemble(app)

if __name__ == "__main__":  # `python -m clawloop.cli` ran nothing and said nothing without this
    main()
