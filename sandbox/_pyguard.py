"""The import guard of a verifier's pythons: project code may be imported, never impersonate.

A sandbox shows this file read-only as `sitecustomize.py` in `PYGUARD_MOUNT`, and the verifier
puts that dir first on PYTHONPATH, so every python it starts (the task runtime's, the system's,
an image's own) imports it at startup, whatever the version (3.8+: no newer syntax here).

Why: Harbor verifiers run `python3 -`, `-c`, `-m pytest` or `python3 /app/main.py` in the
agent's workdir, and Python puts that dir (or the script's) first on sys.path: an agent's
`/workspace/json.py` or `pytest.py` would then run inside the verifier, where the hidden tests
can be read. PYTHONSAFEPATH removes the entry, which also breaks what Harbor allows
(`python3 -m reconciler` with the package in the cwd, `python3 /app/main.py` importing its
siblings). This guard keeps the entry and forbids only the impersonation: a top-level module is
looked up first among the interpreter's own dirs (stdlib, site-packages: everything under
sys.prefix, sys.base_prefix and the exec prefixes, all read-only in a sandbox), and only a name
none of them provides is searched on the whole sys.path (cwd, script dir, the task's PYTHONPATH
such as /app, dirs a test inserts). Submodules follow their package, so they need no check.

Except for the interpreter's own code: an `import` statement in the stdlib or site-packages that
names a module none of their dirs provides is an optional probe (`nt` from ntpath, so pathlib and
pytest; `org.python.core` from copy, so tarfile; `msvcrt`, `_winapi`, `java`...), and its answer
on this platform is "no such module". Searching the agent's dirs for it ran the agent's
`/workspace/nt.py` inside every verifier that imports tarfile or pytest (found 2026-12-07). So a
name the interpreter lacks is searched on the whole path only for a *dynamic* import (runpy's
`-m pkg`, `importlib.import_module` as pytest loads test files, `__import__`) or an import
statement of code outside the interpreter's dirs (the task's tests, the project's own modules);
a static import in the interpreter's own code gets ModuleNotFoundError, as it would elsewhere.
Dynamic probes too: pandas's `import_optional_dependency` calls `importlib.import_module("pytz")`,
which ran an agent's `/workspace/pytz.py` in every verifier importing pandas from the workdir
(found 2026-12-07). So a dynamic import from the interpreter's own code (the caller of importlib's
functions, or of `__import__`) is refused what the interpreter lacks too, unless that code is one
of `LOADERS`: the tools whose job is to import the project by name (runpy, pytest, unittest,
uvicorn, flask, django...).

Startup order makes the rest work: CPython imports `site` (and so this module) before it adds
the script's dir or the cwd to sys.path, so a `sitecustomize.py` or `usercustomize.py` planted
there is never imported at startup (PYTHONNOUSERSITE keeps ~/.local out). No other
sitecustomize runs after this one: the image's (Debian's lives in /etc, which the agent may
write) and one in a task's PYTHONPATH are agent-writable, so they would be agent code in
every verifier python; Harbor tasks rarely ship one.

Known limit: a namespace package (a dir without __init__.py) that the interpreter's dirs also
provide resolves to their portions only.
"""

import os
import sys
from importlib.machinery import PathFinder
from opcode import opmap

_ROOTS = tuple(sorted({os.path.normpath(p) + os.sep for p in
                       (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix) if p}))
_HERE = os.path.dirname(os.path.abspath(__file__))
_IMPORT_NAME = opmap["IMPORT_NAME"]
_MACHINERY = frozenset(("importlib._bootstrap", "importlib._bootstrap_external", "_frozen_importlib",
                        "_frozen_importlib_external"))
"""Modules whose frames stand between an import and the finder (frozen or not)."""


def _trusted(entry, cache={}):  # noqa: B006 - a per-process cache on purpose
    """A sys.path entry of the interpreter's own (never relative: '' is the cwd)."""
    hit = cache.get(entry)
    if hit is None:
        p = os.path.normpath(entry) if isinstance(entry, str) and os.path.isabs(entry) else None
        hit = p is not None and (p == _HERE or (p + os.sep).startswith(_ROOTS))
        cache[entry] = hit
    return hit


LOADERS = frozenset((
    "runpy", "unittest", "doctest", "pydoc", "pdb", "bdb", "cProfile", "profile", "trace", "timeit",
    "code", "_pytest", "pytest", "pluggy", "coverage", "nose2", "behave", "IPython", "uvicorn", "gunicorn",
    "hypercorn", "flask", "werkzeug", "django", "celery", "fastapi_cli", "hydra", "alembic", "invoke"))
"""Top-level packages of the interpreter's own code whose dynamic imports may find the project's
modules on the whole path: they run or serve the code a verifier names (`-m pkg`, test files and
conftests, `main:app`, a settings module)."""


def _own(code):
    """Code from a file of the interpreter's own dirs or a module frozen into it (3.11 freezes os,
    ntpath, runpy...: `<frozen ntpath>`). A name can only be claimed for more checking, never
    less: code that names itself `<frozen x>` is refused what the interpreter lacks, as the stdlib is."""
    path = code.co_filename
    return path.startswith("<frozen ") or (os.path.isabs(path) and _trusted(os.path.dirname(path)))


def _package(frame):
    return (frame.f_globals.get("__name__") or "").split(".")[0]


def _own_code_probes(frame):
    """True when the import being resolved comes from the interpreter's own code and must not fall
    through to the agent's dirs: an `import` statement there, or a dynamic import (importlib's
    functions, `__import__`) from own code that no LOADERS frame called (pandas's probe under
    `import pandas` in a test file is refused; pytest importing the test file is not)."""
    while frame is not None and frame.f_globals.get("__name__") in _MACHINERY:
        frame = frame.f_back
    if frame is None or frame.f_lasti < 0:
        return False
    if frame.f_code.co_code[frame.f_lasti] == _IMPORT_NAME:
        return _own(frame.f_code)
    while frame is not None and _package(frame) == "importlib":  # import_module, util.find_spec, metadata
        frame = frame.f_back
    if frame is None or not _own(frame.f_code):
        return False  # the project's or the verifier's own code asked for it by name
    while frame is not None and _own(frame.f_code):  # a loader may go through a helper (pkgutil.resolve_name)
        if _package(frame) in LOADERS:
            return False
        frame = frame.f_back
    return True


class ShadowGuard:
    """A meta-path finder just before PathFinder: the interpreter's dirs win top-level names."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if path is not None:
            return None
        entries = sys.path
        own = [e for e in entries if _trusted(e)]
        if len(own) == len(entries):
            return None  # nothing else on sys.path: PathFinder alone decides
        spec = PathFinder.find_spec(name, own, target)
        if spec is None and _own_code_probes(sys._getframe(1)):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        # None: no own module of that name, PathFinder (next) searches the whole path
        return spec

    @classmethod
    def invalidate_caches(cls):
        pass


def own_pytest_plugins():
    """Module names of the pytest plugins (entry points of group pytest11) that distributions in
    the interpreter's own dirs declare. A verifier's pytest runs with plugin autoload off and loads
    these through PYTEST_PLUGINS: autoload would also read a `*.dist-info` in the cwd (on sys.path
    under `python3 -m pytest`) and import the agent's module it names, which this guard lets
    through (no module of the interpreter's has that name)."""
    from importlib import metadata

    names = []
    for dist in metadata.distributions(path=[e for e in sys.path if _trusted(e)]):
        for ep in dist.entry_points:
            module = ep.value.split(":")[0].strip()
            if ep.group == "pytest11" and module and module not in names:
                names.append(module)
    return names


def install(meta_path=None):
    """Put ShadowGuard just before PathFinder in `meta_path` (sys.meta_path), once."""
    meta = sys.meta_path if meta_path is None else meta_path
    if any(getattr(f, "__name__", "") == "ShadowGuard" for f in meta):
        return
    at = next((i for i, f in enumerate(meta) if f is PathFinder), len(meta))
    meta.insert(at, ShadowGuard)


if __name__ == "sitecustomize":
    install()
