"""The verifier's import guard (sandbox/_pyguard.py): project code imports as under Harbor, but
never shadows a module of the interpreter's own dirs. Its attacks are in tests/security."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import sandbox
from clawloop.core.runtime import runtime_dir
from sandbox._layout import pyguard_dir

FIXTURE = Path(__file__).parent / "fixtures" / "harbor-offline" / "project-imports"
PLANT = "import sys\nprint('PLANTED', __name__, file=sys.stderr)\n"


def _pythons() -> list[str]:
    rt = runtime_dir()
    found = ["/usr/bin/python3"] if Path("/usr/bin/python3").exists() else []
    return found + ([str(rt / "bin" / "python3")] if rt is not None else [])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """/app-like dir: a package run with -m, a script with a sibling, and planted shadows."""
    app = tmp_path / "app"
    (app / "pkg").mkdir(parents=True)
    (app / "pkg" / "__init__.py").write_text("")
    (app / "pkg" / "__main__.py").write_text("import json, sibling\nprint('PKG', sibling.X, json.__name__)\n")
    (app / "sibling.py").write_text("X = 42\n")
    (app / "main.py").write_text("import sibling\nprint('MAIN', sibling.X)\n")
    for name in ("json", "pytest", "yaml", "sitecustomize", "usercustomize"):
        (app / f"{name}.py").write_text(PLANT)
    return app


def _py(python: str, args: list[str], cwd: Path, guard: Path | None, pythonpath: str = "") -> str:
    env = {"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    path = ":".join(p for p in (str(guard) if guard else "", pythonpath) if p)
    if path:
        env["PYTHONPATH"] = path
    r = subprocess.run([python, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    return r.stdout + r.stderr


@pytest.mark.parametrize("python", _pythons())
def test_project_imports_but_never_shadows(python: str, project: Path, tmp_path: Path) -> None:
    guard = pyguard_dir(tmp_path)
    # without the guard the plants are live: the test would prove nothing otherwise
    assert "PLANTED json" in _py(python, ["-c", "import json"], project, None)
    out = _py(python, ["-m", "pkg"], project, guard)
    assert "PKG 42 json" in out and "PLANTED" not in out, out
    out = _py(python, [str(project / "main.py")], tmp_path, guard)
    assert "MAIN 42" in out and "PLANTED" not in out, out
    code = "import json, sibling; print(json.__file__)"
    out = _py(python, ["-c", code], project, guard)
    assert "/json/__init__.py" in out and "PLANTED" not in out, out
    # the task's PYTHONPATH (Harbor images set /app) is project code too
    out = _py(python, ["-c", code], tmp_path, guard, pythonpath=str(project))
    assert "/json/__init__.py" in out and "PLANTED" not in out, out
    # sitecustomize/usercustomize in the cwd never run at startup
    assert "PLANTED" not in _py(python, ["-c", "pass"], project, guard)


def test_installed_packages_win_over_project_modules(project: Path, tmp_path: Path) -> None:
    rt = runtime_dir()
    if rt is None or not list((rt / "lib").glob("python3*/site-packages/yaml")):
        pytest.skip(f"the task runtime {rt} has no yaml")
    python, guard = str(rt / "bin" / "python3"), pyguard_dir(tmp_path)
    assert "PLANTED __main__" in _py(python, ["-m", "pytest", "--version"], project, None)
    out = _py(python, ["-m", "pytest", "--version"], project, guard)
    assert "pytest" in out and "PLANTED" not in out, out
    out = _py(python, ["-c", "import yaml; print(yaml.__file__)"], project, guard)
    assert "site-packages/yaml" in out and "PLANTED" not in out, out


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_harbor_project_imports_pass_with_the_oracle(backend: str) -> None:
    """`python3 -m tally` in /app and `python3 /app/main.py` (a sibling import) work in the
    verifier as under Harbor; the no-op agent still fails."""
    from clawloop.core.agent.oracle import run_episode
    from clawloop.core.tasks.environment import image_skip_reason
    from clawloop.core.tasks.harbor import load_harbor_task

    if why := sandbox.unavailable_reason(backend):
        pytest.skip(f"{backend} backend unavailable: {why}")
    task = load_harbor_task(FIXTURE)
    if why := image_skip_reason(task, backend):
        pytest.skip(why)
    assert task.workdir == "/app"
    oracle = run_episode(task, "oracle", backend)
    assert oracle.outcome == "passed", (oracle.reason, oracle.verifier_output)
    noop = run_episode(task, "noop", backend)
    assert noop.outcome == "failed", (noop.reason, noop.verifier_output)


@pytest.mark.parametrize(("backend", "safepath"), [("local", "1"), ("bwrap", "")])
def test_without_the_guard_the_verifier_falls_back_to_safepath(backend: str, safepath: str) -> None:
    """The local backend mounts no guard: the verifier's prelude then sets PYTHONSAFEPATH."""
    from clawloop.core.tasks.verifier import PY_PRELUDE
    from sandbox._layout import PYGUARD_MOUNT

    if why := sandbox.unavailable_reason(backend):
        pytest.skip(f"{backend} backend unavailable: {why}")
    if backend == "local" and Path(PYGUARD_MOUNT).exists():
        pytest.skip(f"{PYGUARD_MOUNT} exists on this host")
    with sandbox.open(backend) as sb:
        r = sb.exec(PY_PRELUDE + 'echo "[${PYTHONSAFEPATH:-}]"', timeout=30)
    assert r.output.strip() == f"[{safepath}]", r.output



def test_own_code_dynamic_probes_never_reach_the_project_but_loaders_do(project: Path, tmp_path: Path) -> None:
    """pandas's optional-dependency probe is `importlib.import_module("pytz")` from site-packages: a
    name the interpreter lacks must not resolve to the project's `pytz.py`; runpy, unittest and the
    project's own dynamic imports still find its modules."""
    rt = runtime_dir()
    python = str(rt / "bin" / "python3") if rt is not None else ""
    if not python or "NO-PANDAS" in _py(python, ["-c", "import importlib.util as u; "
                                                 "print('NO-PANDAS' if u.find_spec('pandas') is None "
                                                 "or u.find_spec('pytz') else 'OK')"], tmp_path, None):
        pytest.skip("needs the task runtime's pandas without pytz (the probe under attack)")
    guard = pyguard_dir(tmp_path)
    (project / "pytz.py").write_text(PLANT)
    assert "PLANTED pytz" in _py(python, ["-c", "import pandas"], project, None)  # live without the guard
    out = _py(python, ["-c", "import pandas; print('PANDAS', pandas.__version__)"], project, guard)
    assert "PANDAS" in out and "PLANTED" not in out, out
    out = _py(python, ["-c", "import importlib; importlib.import_module('pytz')"], project, guard)
    assert "PLANTED pytz" in out, out  # the verifier's own dynamic import: the project's module
    out = _py(python, ["-m", "unittest", "-q", "sibling"], project, guard)
    assert "Ran 0 tests" in out and "PLANTED" not in out, out  # unittest imports the project by name
    assert "PKG 42 json" in _py(python, ["-m", "pkg"], project, guard)  # runpy
