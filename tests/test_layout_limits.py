"""The sizes issue #50 set for a house a newcomer can read: dvc.yaml <= 300 lines, no library module
over 450 lines, no stage script over 25 lines of code (docstrings, comments and blanks aside), a
README of at most 15 KB. A file that grows past one is split, not the limit raised."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DVC_YAML_LINES = 300
MODULE_LINES = 450
STAGE_CODE_LINES = 25
README_BYTES = 15_000


def code_lines(source: str) -> int:
    """Lines that hold code: not blank, not a comment, not part of a docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return sum(1 for n, line in enumerate(source.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#") and n not in docstrings)


def test_code_lines_leave_out_docstrings_comments_and_blanks() -> None:
    src = '"""Module\n\ndoc."""\n\n# why\nimport os\n\n\ndef f() -> None:\n    """Doc."""\n    os.sep  # here\n'
    assert code_lines(src) == 3


def test_dvc_yaml_stays_short() -> None:
    assert len((ROOT / "dvc.yaml").read_text(encoding="utf-8").splitlines()) <= DVC_YAML_LINES


def test_no_library_module_is_over_the_limit() -> None:
    over = {str(p.relative_to(ROOT)): n for pkg in ("clawloop", "sandbox") for p in (ROOT / pkg).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MODULE_LINES}
    assert not over, f"modules over {MODULE_LINES} lines: {over}"


def test_stage_scripts_are_thin() -> None:
    scripts = sorted((ROOT / "stages").glob("*.py"))
    assert len(scripts) > 5
    over = {p.name: n for p in scripts if (n := code_lines(p.read_text(encoding="utf-8"))) > STAGE_CODE_LINES}
    assert not over, f"stage scripts over {STAGE_CODE_LINES} lines of code: {over}"


def test_readme_fits_a_first_read() -> None:
    assert len((ROOT / "README.md").read_bytes()) <= README_BYTES
