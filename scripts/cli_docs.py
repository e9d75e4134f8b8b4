"""Write docs/cli.md's command reference from the live typer app (clawloop.cli.app).

    .venv/bin/python scripts/cli_docs.py           # rewrite docs/cli.md
    .venv/bin/python scripts/cli_docs.py --check   # exit 1 when docs/cli.md is out of date

docs/cli.md keeps its hand-written prose above MARKER; everything below it is generated: every
command and subcommand with its help, arguments and options (type names as `--help` shows them,
defaults, ranges) and its examples (clawloop.commands.examples, the ones `--help` ends with).
tests/test_cli_docs.py fails when the file differs from what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "cli.md"
MARKER = ("<!-- Generated below this line by `.venv/bin/python scripts/cli_docs.py` from the app "
          "(clawloop/cli.py); edit the commands' help or clawloop/commands/examples.py, not this. -->")


def commands(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """(path, command) for every visible command under `cmd`, in `--help`'s order, groups last."""
    leaves, groups = [], []
    for name, sub in cmd.commands.items():
        if getattr(sub, "hidden", False):
            continue
        if hasattr(sub, "commands"):  # a group (typer vendors its click: duck-typed)
            groups.extend(commands(sub, (*path, name)))
        else:
            leaves.append(((*path, name), sub))
    return leaves + groups


def _default(param: Any) -> str:
    if param.required:
        return "required"
    if isinstance(param.show_default, str):
        return f"default: {param.show_default}"
    value = param.default
    if not param.show_default or value is None or callable(value) or value in ([], ()):
        return ""
    if getattr(param, "is_flag", False):
        on = value is True and getattr(param, "secondary_opts", None)
        return f"default: `{param.opts[0]}`" if on else ""
    if isinstance(value, (list, tuple)):
        value = ", ".join(map(str, value))
    return f"default: `{value}`"


def _range(param: Any) -> str:
    lo, hi = getattr(param, "min", None), getattr(param, "max", None)
    if lo is not None and hi is not None:
        return f"{lo} to {hi}"
    return f">= {lo}" if lo is not None else (f"<= {hi}" if hi is not None else "")


def _md(text: str) -> str:
    """Help text as Markdown: `<` escaped outside backticks, so `<out>.json` is not read as a tag."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("<", "\\<") for i, p in enumerate(parts))


def _param_line(param: Any) -> str:
    from clawloop.cli import type_name

    if param.param_type_name == "argument":
        names = f"`{param.name.upper()}{'...' if param.nargs == -1 else ''}`"
    else:
        names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
    facts = [f for f in (type_name(param), _range(param), _default(param)) if f]
    if getattr(param, "multiple", False):
        facts.append("repeatable")
    help_text = _md(" ".join((param.help or "").split()))
    return f"- {names}" + (f" ({', '.join(facts)})" if facts else "") + (f": {help_text}" if help_text else "")


def _usage(path: tuple[str, ...], cmd: Any) -> str:
    words = ["clawloop", *path]
    if any(p.param_type_name == "option" for p in cmd.params):
        words.append("[OPTIONS]")
    for p in cmd.params:
        if p.param_type_name == "argument":
            name = p.name.upper() + ("..." if p.nargs == -1 else "")
            words.append(name if p.required else f"[{name}]")
    return " ".join(words)


def _anchor(path: tuple[str, ...]) -> str:
    return "clawloop-" + "-".join(path)


def reference() -> str:
    """The generated part of docs/cli.md."""
    import typer.main

    from clawloop.cli import app
    from clawloop.commands.examples import examples

    found = commands(typer.main.get_command(app))
    out = ["## Commands", "", "| command | what it does |", "|---|---|"]
    for path, cmd in found:
        first = _md((cmd.help or "").split("\n\n")[0]).replace("|", "\\|").replace("\n", " ")
        out.append(f"| [`clawloop {' '.join(path)}`](#{_anchor(path)}) | {first} |")
    for path, cmd in found:
        out += ["", f"### clawloop {' '.join(path)}", "", _md((cmd.help or "").strip()), "",
                "```", _usage(path, cmd), "```"]
        visible = [p for p in cmd.params if not getattr(p, "hidden", False)]
        if visible:
            out += [""] + [_param_line(p) for p in visible]
        lines = examples(" ".join(path))
        if lines:
            out += ["", "Example:" if len(lines) == 1 else "Examples:", "", "```bash", *lines, "```"]
    return "\n".join(out) + "\n"


def render(current: str) -> str:
    """docs/cli.md as it should read: `current`'s prose above MARKER, then the reference."""
    prose = current.split(MARKER)[0].rstrip("\n") if MARKER in current else current.rstrip("\n")
    return f"{prose}\n\n{MARKER}\n\n{reference()}"


def main(argv: list[str]) -> int:
    current = DOC.read_text(encoding="utf-8")
    wanted = render(current)
    if "--check" in argv:
        if current != wanted:
            print(f"{DOC.relative_to(ROOT)} is out of date: run .venv/bin/python scripts/cli_docs.py",
                  file=sys.stderr)
            return 1
        return 0
    DOC.write_text(wanted, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
