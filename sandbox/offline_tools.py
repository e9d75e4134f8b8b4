#!/usr/bin/env python3
"""Offline stand-ins for apt-get, apt, curl (the uv installer), uv and uvx inside a sandbox.

Why: Harbor's standard verifier template installs its tools from the network
(`apt-get install -y curl`, `curl -LsSf https://astral.sh/uv/.../install.sh | sh`,
`source $HOME/.local/bin/env`, `uvx --with pytest==... pytest ...`), and a sandbox has none.
The task runtime already holds what those lines fetch (python3, pytest, pytest-json-ctrf, ...),
so these stand-ins answer from what is there and fail clearly, naming the package, when it is not:

- `apt-get install P...` succeeds when every P is installed on the host (the list
  `dpkg-installed.txt` next to this script, written when the runtime is built from
  `dpkg-query`) or in an environment layer merged into the sandbox (its list in
  /usr/share/clawloop-layers), or is a python3-X whose X is in the runtime; else exit 100 naming P.
  `update`, `clean`, `autoremove` ... succeed and do nothing.
- `curl` of the uv installer prints a script that puts uv/uvx wrappers and an `env` file in
  $HOME/.local/bin, as the real installer does; any other URL goes to the host's curl (which
  has no network inside: it fails as it would).
- `uvx [--with P]... CMD ARGS` / `uv run` / `uv tool run` run CMD from the runtime after checking
  every P is installed there (version pins are not enforced: the runtime has one version);
  `uv pip install P...` succeeds when every P is installed.

One file, dispatching on the name it is called by: setup.sh copies it into the runtime's bin/
under each name. The host imports it too (`apt_satisfied`, `PYTHON_APT`), so the importer's
classifier and the stand-in agree on what an offline apt-get can do.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterable

PYTHON_APT = frozenset({"python3", "python3-pip", "python3-venv", "python3-dev", "python-is-python3",
                        "python3-full", "python3-setuptools", "python3-wheel", "python-pip"})
"""apt packages the runtime's python3 (with pip) stands for."""
UV_INSTALLER = re.compile(r"^https?://(astral\.sh/uv/([0-9.]+/)?install\.sh|github\.com/astral-sh/uv/)")
DPKG_LIST = "dpkg-installed.txt"
"""Names of the host's installed apt packages, one a line, next to this script in the runtime."""
LAYER_LISTS = "/usr/share/clawloop-layers"
"""Where environment layers merged over /usr list their apt packages (`KEY.list`, sandbox/layers.py):
installed too, as far as this stand-in is concerned."""


def norm(name: str) -> str:
    """A python distribution name as pip compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def apt_name(arg: str) -> str:
    """`pkg=1.2`, `pkg:amd64` → `pkg`."""
    return re.split(r"[=:]", arg, maxsplit=1)[0]


def apt_satisfied(pkg: str, installed: Callable[[str], bool], has_python: Callable[[str], bool]) -> bool:
    """Whether an offline `apt-get install pkg` may succeed: the host has it, or the runtime does."""
    pkg = apt_name(pkg)
    if pkg in PYTHON_APT or installed(pkg):
        return True
    if pkg.startswith("python3-") and len(pkg) > 8:
        return has_python(pkg[8:]) or has_python("py" + pkg[8:])
    return False


def requirement_name(req: str) -> str:
    return re.split(r"[\[<>=!~; @]", req.strip(), maxsplit=1)[0]


# --------------------------------------------------------------------------- inside the sandbox
def _has_python(dist: str) -> bool:
    from importlib import metadata

    if norm(dist) in {"pip", "setuptools", "wheel"}:
        return True
    try:
        metadata.distribution(dist)
        return True
    except metadata.PackageNotFoundError:
        return False


def _dpkg_installed() -> frozenset[str]:
    paths = [os.path.join(os.path.dirname(os.path.realpath(__file__)), DPKG_LIST)]
    with contextlib.suppress(OSError):  # no layer merged: the host's list alone
        paths += sorted(os.path.join(LAYER_LISTS, n) for n in os.listdir(LAYER_LISTS) if n.endswith(".list"))
    names: set[str] = set()
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                names.update(line.strip() for line in f if line.strip())
        except OSError:
            continue
    return frozenset(names)


def _say(tool: str, msg: str) -> None:
    print(f"{tool} (clawloop offline stand-in): {msg}", file=sys.stderr)


def apt_get(tool: str, args: list[str]) -> int:
    words = [a for a in args if not a.startswith("-")]
    skip_next = {"-o", "-t", "-c"}
    pkgs, it = [], iter(args)
    for a in it:
        if a in skip_next:
            next(it, None)
        elif not a.startswith("-"):
            pkgs.append(a)
    sub = words[0] if words else ""
    if sub not in ("install", "reinstall"):
        return 0  # update, clean, autoremove, upgrade...: nothing to do offline
    host = _dpkg_installed()
    missing = [p for p in pkgs[1:] if not apt_satisfied(p, host.__contains__, _has_python)]
    if missing:
        _say(tool, f"E: package(s) {', '.join(missing)} not installed on this host, and the sandbox "
                   "has no network")
        return 100
    print(f"{' '.join(apt_name(p) for p in pkgs[1:])}: already installed (offline)")
    return 0


def _check_python(tool: str, reqs: Iterable[str]) -> int:
    missing = [r for r in reqs if r and not _has_python(requirement_name(r))]
    if missing:
        _say(tool, f"python package(s) {', '.join(missing)} not in the task runtime, and the sandbox "
                   "has no network")
        return 1
    return 0


def _run(tool: str, args: list[str]) -> int:
    """uvx-style: options (--with P, --from P, -p/--python V, ...), then the command."""
    reqs: list[str] = []
    it = iter(args)
    for a in it:
        if a in ("--with", "-w", "--from"):
            reqs.append(next(it, ""))
        elif a.startswith(("--with=", "--from=")):
            reqs.append(a.split("=", 1)[1])
        elif a in ("-p", "--python", "--with-requirements", "--index-url", "--extra-index-url",
                   "--directory", "--project", "--env-file", "-i"):
            next(it, None)
        elif a.startswith("-"):
            continue
        else:
            cmd = [a, *it]
            rc = _check_python(tool, [r for x in reqs for r in x.split(",")])
            if rc:
                return rc
            name = requirement_name(cmd[0])
            cmd[0] = name if name else cmd[0]
            os.execvp(cmd[0], cmd)
    _say(tool, "no command given")
    return 2


def uv(tool: str, args: list[str]) -> int:
    if tool == "uvx":
        return _run(tool, args)
    if args[:1] == ["run"]:
        return _run(tool, args[1:])
    if args[:2] == ["tool", "run"]:
        return _run(tool, args[2:])
    if args[:2] == ["pip", "install"]:
        reqs = [a for a in args[2:] if not a.startswith("-")]
        return _check_python(tool, reqs)
    if args[:1] in (["--version"], ["version"], ["self"]):
        print("uv 0.0.0 (clawloop offline stand-in)")
        return 0
    _say(tool, f"`uv {' '.join(args[:2])}` needs the network or a project environment")
    return 2


_INSTALLER = """#!/bin/sh
# clawloop offline stand-in for the uv installer: wrappers that run the task runtime's tools
set -e
d="$HOME/.local/bin"
mkdir -p "$d"
for t in uv uvx; do printf '#!/bin/sh\\nexec %s/%s "$@"\\n' "{bindir}" "$t" > "$d/$t"; chmod +x "$d/$t"; done
printf 'case ":$PATH:" in *":%s:"*) ;; *) export PATH="%s:$PATH" ;; esac\\n' "$d" "$d" > "$d/env"
cp "$d/env" "$d/env.fish" 2>/dev/null || true
echo "installed uv (offline stand-in) to $d"
"""


def curl(tool: str, args: list[str]) -> int:
    if any(UV_INSTALLER.match(a) for a in args):
        sys.stdout.write(_INSTALLER.replace("{bindir}", os.path.dirname(os.path.abspath(sys.argv[0]))))
        return 0
    for real in (f"/usr/bin/{tool}", f"/bin/{tool}"):
        if os.access(real, os.X_OK):
            os.execv(real, [tool, *args])
    _say(tool, "no network in the sandbox")
    return 6


def main(argv: list[str]) -> int:
    tool = os.path.basename(argv[0])
    if tool in ("apt-get", "apt"):
        return apt_get(tool, argv[1:])
    if tool in ("uv", "uvx"):
        return uv(tool, argv[1:])
    if tool in ("curl", "wget"):
        return curl(tool, argv[1:])
    _say(tool, "unknown stand-in name")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
