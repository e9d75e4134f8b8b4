"""What a task's scripts call that its Dockerfile's image must provide (issue #75 D3).

clawloop's procedural tasks are exported `FROM ubuntu:24.04` and their test.sh runs
`python3 /tests/check.py`; stock ubuntu:24.04 has no python3, so in Harbor with Docker every one
scored 0 whatever the agent did, while the bwrap backend (the host's /usr) passed them. The
exporter installs each interpreter the task's scripts call (`install_line`), and
`missing_interpreters` is the check: used by the export and by a test over every shipped task.

The scan is of words, not a parse: a script that only mentions `python3` (in an echo, say) counts
as calling it, which costs an apt package and never a task.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from clawloop.core.tasks.shell_words import command_words, shell_segments
from clawloop.core.tasks.task import Task

INTERPRETER_PACKAGES: dict[str, frozenset[str]] = {
    "python3": frozenset({"python3", "python3-minimal", "python3-pip", "python3-venv", "python3-full",
                          "python3-dev", "python-is-python3"}),
    "python": frozenset({"python-is-python3"}),
}
"""Interpreters a task's scripts call that stock Debian and Ubuntu images lack, each with the apt
packages that bring it (a dependency counts: python3-pip pulls python3 in)."""

INSTALL_PACKAGE: dict[str, str] = {"python3": "python3", "python": "python-is-python3"}
"""The apt package the exporter installs for each interpreter (offline, the bwrap backend's apt
stand-in serves both from the task runtime: sandbox.offline_tools.PYTHON_APT)."""

PYTHON_IMAGE = re.compile(r"(?:^|/)python(?:[-:@]|$)")
"""Base images that already have python3 and python: the official `python:*` images and
Terminal-Bench's `.../python-3-13` bases."""

_CALL = re.compile(r"(?<![\w.+-])(?:[\w./-]*/)?(" + "|".join(INTERPRETER_PACKAGES) + r")(?![\w.+-])")
"""An interpreter's name as a word or a path's last part (`python3 -`, `/usr/bin/env python3`)."""
_PYTHON_LINK = re.compile(r"\s/(?:usr/)?(?:local/)?bin/python(?![\w.+-])")
"""A path `/usr/bin/python` in the Dockerfile (`ln -s /usr/bin/python3 /usr/bin/python`): with
python3 installed, it stands for python-is-python3."""
_COMMENT = re.compile(r"^\s*#(?!!).*$", re.M)
"""Comment lines (a `#!` line stays: its interpreter runs the file)."""


def called_interpreters(scripts: Iterable[str]) -> set[str]:
    """The interpreters of INTERPRETER_PACKAGES that `scripts` (shell text) name, comments aside."""
    return {m.group(1) for s in scripts for m in _CALL.finditer(_COMMENT.sub("", s))}


def _base_image(dockerfile: str) -> str:
    """The image of the Dockerfile's last FROM ('' without one)."""
    froms = re.findall(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", dockerfile, re.M | re.I)
    return froms[-1] if froms else ""


def apt_installed(dockerfile: str) -> set[str]:
    """Packages the Dockerfile's RUN lines name to `apt-get install` or `apt install`."""
    text = re.sub(r"\\\n", " ", re.sub(r"^\s*#.*\n", "", dockerfile, flags=re.M))  # Docker drops comment lines
    pkgs: set[str] = set()
    for run in re.findall(r"^\s*RUN\s+(.*)$", text, re.M | re.I):
        for seg in shell_segments(run):
            words = command_words(seg.text)
            if words[:1] in (["apt-get"], ["apt"]) and "install" in words:
                args = words[words.index("install") + 1:]
                pkgs |= {w.split("=")[0] for w in args if not w.startswith("-")}
    return pkgs


def missing_interpreters(dockerfile: str, scripts: Iterable[str]) -> list[str]:
    """The interpreters `scripts` call that the Dockerfile neither installs nor has in its base image."""
    if PYTHON_IMAGE.search(_base_image(dockerfile).split("@")[0]):
        return []
    have = apt_installed(dockerfile)
    if have & INTERPRETER_PACKAGES["python3"] and _PYTHON_LINK.search(dockerfile):
        have.add("python-is-python3")
    return sorted(i for i in called_interpreters(scripts) if not INTERPRETER_PACKAGES[i] & have)


def install_line(interpreters: Iterable[str]) -> str:
    """The Dockerfile RUN line that installs `interpreters` on a Debian or Ubuntu base."""
    pkgs = " ".join(sorted({INSTALL_PACKAGE[i] for i in interpreters}))
    return f"RUN apt-get update && apt-get install -y --no-install-recommends {pkgs} && rm -rf /var/lib/apt/lists/*"


def task_scripts(task: Task) -> list[str]:
    """A task's scripts: its setup commands, its solution's steps, and every shell script or `#!`
    file of its verifier and solution."""
    files = [*task.verifier.files.items(), *(task.solution.files.items() if task.solution else ())]
    texts = [spec.data().decode("utf-8", errors="replace") for _, spec in files]
    return [*task.setup, *(task.solution.steps if task.solution else ()),
            *(t for (name, _), t in zip(files, texts, strict=True) if name.endswith(".sh") or t.startswith("#!"))]


def task_dir_scripts(task_dir: Path) -> list[str]:
    """A Harbor task directory's scripts: every shell script or `#!` file under tests/ and solution/."""
    out = []
    for sub in ("tests", "solution"):
        for p in sorted((task_dir / sub).rglob("*")) if (task_dir / sub).is_dir() else ():
            if p.is_file() and not p.is_symlink():
                text = p.read_text(errors="replace")
                if p.suffix == ".sh" or text.startswith("#!"):
                    out.append(text)
    return out


def task_dir_missing(task_dir: Path) -> list[str]:
    """`missing_interpreters` of a Harbor task directory as written (environment/Dockerfile)."""
    dockerfile = (task_dir / "environment" / "Dockerfile").read_text(errors="replace")
    return missing_interpreters(dockerfile, task_dir_scripts(task_dir))
