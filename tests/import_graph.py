"""The project's import graph, read from the source with `ast` (nothing is imported).

What tests/test_import_cycles.py and tests/test_dvc_deps.py read. An import is an edge from the
module that holds it to the project module it names, wherever it stands: at the top, or inside
a function (it runs when the function does). Imports under `if TYPE_CHECKING:` never run and are
left out; `importlib.import_module("a.b")` counts, and `import_module(f"a.b.{name}")` imports
every module of `a.b`. `from a import b` names the module `a.b` when there is one, else `a`.
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
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module" and node.args):
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return [arg.value]
        if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
            prefix = str(arg.values[0].value)  # f"pkg.{name}": any module of pkg
            return [m for m in modules() if m.startswith(prefix) and m != prefix.rstrip(".")]
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


def parents(module: str) -> list[str]:
    """The packages Python runs the __init__.py of before `module` ("a.b.c" → ["a", "a.b"])."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def closure(start: str, top_level_only: frozenset[str] = frozenset()) -> dict[str, list[str]]:
    """Every project module that running `start` can execute → a chain of imports leading to it.

    A module that is imported runs whole: its imports at the top and those in its functions are
    followed. A package whose submodule is imported runs its __init__.py's top only (its functions,
    e.g. a lazy `__getattr__`, run only when the package itself is imported). Modules in
    `top_level_only` are followed at their top only.
    """
    chains: dict[str, list[str]] = {}
    full: set[str] = set()
    todo: list[tuple[str, bool, list[str]]] = [(start, True, [start])]
    while todo:
        module, whole, chain = todo.pop()
        if module in full or (not whole and module in chains):
            continue
        chains.setdefault(module, chain)
        if whole:
            full.add(module)
        for p in parents(module):
            todo.append((p, False, [*chain, p]))
        for imp in imports(module):
            if imp.local and (not whole or module in top_level_only):
                continue
            todo.append((imp.target, True, [*chain, imp.target]))
    return chains


def trivial(module: str) -> bool:
    """A module that cannot change what runs: only a docstring, `from __future__`, `__all__` and
    constant assignments (e.g. an empty package __init__.py)."""
    tree = ast.parse(modules()[module].read_text())
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant | ast.List | ast.Tuple) and \
                all(isinstance(e, ast.Constant) for e in ast.walk(node.value) if isinstance(e, ast.expr)
                    and e is not node.value):
            continue
        return False
    return True


def _path_of(node: ast.expr, here: Path) -> Path | None:
    """The path an expression built from `Path(__file__)` (.parent, .parents[N], .resolve(),
    .with_name("x"), / "x") or `importlib.resources.files("pkg")` (.joinpath("x")) names, or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Path" and \
            len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == "__file__":
        return here
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        literal = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
        if node.func.attr == "files" and literal in modules():  # importlib.resources.files("pkg")
            return modules()[literal].parent
        base = _path_of(node.func.value, here)
        if base is not None and node.func.attr == "resolve":
            return base
        if base is not None and node.func.attr in ("with_name", "joinpath") and isinstance(literal, str):
            return base.with_name(literal) if node.func.attr == "with_name" else base / literal
        return None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        base = _path_of(node.value, here)
        return base.parent if base is not None else None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents" \
            and isinstance(node.slice, ast.Constant):
        base = _path_of(node.value.value, here)
        return base.parents[node.slice.value] if base is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant):
        base = _path_of(node.left, here)
        return base / node.right.value if base is not None else None
    return None


def data_paths(module: str) -> list[str]:
    """Files and directories of the project `module` reads beside its code, relative to the root:
    paths built from `Path(__file__)` or `importlib.resources.files("pkg")` (templates, word lists,
    scripts copied into sandboxes). Paths that do not exist
    or are not part of the sources (a built `.runtime/`) are left out."""
    here = modules()[module]
    tree = ast.parse(here.read_text())
    inner = {id(part) for node in ast.walk(tree) if isinstance(node, ast.expr) and _path_of(node, here)
             for part in ast.walk(node) if part is not node}  # parts of a longer path expression
    found: set[Path] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and id(node) not in inner and (path := _path_of(node, here)) not in (None, here):
            found.add(path)
    out = set()
    for path in found:
        path = path.resolve() if path.is_symlink() else path
        if not path.exists() or not path.is_relative_to(ROOT):
            continue
        rel = path.relative_to(ROOT)
        if rel.parts and not any(part.startswith(".") for part in rel.parts) and rel.parts[0] in PACKAGES + ("benchmarks",):
            out.add(rel.as_posix())
    # a path inside another one found is covered by it
    return sorted(p for p in out if not any(p.startswith(q + "/") for q in out))
