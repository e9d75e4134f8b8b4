"""The project's import graph, read from the source with `ast` (nothing is imported).

What tests/test_import_cycles.py and tests/test_dvc_deps.py read. An import is an edge from the
module that holds it to the project module it names, wherever it stands: at the top, or inside
a function (it runs when the function does). Imports under `if TYPE_CHECKING:` never run and are
left out; `importlib.import_module("a.b")` with a literal name counts. `from a import b` names
the module `a.b` when there is one, else `a`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("clawloop", "sandbox", "stages")
"""Top-level packages of the project (everything else is a third-party or stdlib import)."""


@dataclass(frozen=True)
class Import:
    target: str
    """The project module imported."""
    local: bool
    """Inside a function (runs when it is called), not at the module's top."""
    line: int


@cache
def modules() -> dict[str, Path]:
    """Dotted name → file of every project module (a package by its __init__.py)."""
    out = {}
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def is_package(module: str) -> bool:
    return modules()[module].name == "__init__.py"


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(name: str) -> str | None:
    """The project module `name` names, or None (not ours)."""
    mods = modules()
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def _names(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, *([base] if base else [])])
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base for a in node.names]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return [node.args[0].value]
    return []


@cache
def imports(module: str) -> tuple[Import, ...]:
    """The project modules `module` imports (see the module docstring)."""
    path = modules()[module]
    package = module if is_package(module) else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, local: bool) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for child in node.orelse:
                visit(child, local)
            return
        for name in _names(node, package):
            target = _resolve(name)
            imp = Import(target, local, getattr(node, "lineno", 0)) if target not in (None, module) else None
            if imp is not None and imp not in found:
                found.append(imp)
        inner = local or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text(), str(path)), False)
    return tuple(found)


def relpath(module: str) -> str:
    return modules()[module].relative_to(ROOT).as_posix()
