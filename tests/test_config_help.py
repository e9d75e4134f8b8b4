"""Config fields carry their help text one way: an attribute docstring under the field (issue #50;
`Field(description=...)` and `field(metadata={"help": ...})` were two more)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = sorted((ROOT / "clawloop" / "config").glob("*.py"))


def _fields(tree: ast.Module) -> list[tuple[ast.ClassDef, int, ast.AnnAssign]]:
    return [(cls, i, st) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
            for i, st in enumerate(cls.body)
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
            and not st.target.id.startswith("_") and st.target.id != "model_config"]


def test_no_help_text_in_field_calls() -> None:
    found = [f"{p.relative_to(ROOT)}:{node.lineno} {kw.arg}" for p in CONFIG for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.Call) for kw in node.keywords
             if kw.arg == "description" or (kw.arg == "metadata" and "help" in ast.unparse(kw.value))]
    assert not found, "help text belongs in an attribute docstring under the field:\n  " + "\n  ".join(found)


def test_every_config_field_has_a_docstring() -> None:
    """A knob says what it does; a field holding a section (a config class of its own) is
    documented by that class's docstring."""
    assert len(CONFIG) >= 8
    trees = {p: ast.parse(p.read_text()) for p in CONFIG}
    sections = {c.name for tree in trees.values() for c in ast.walk(tree) if isinstance(c, ast.ClassDef)}
    bare = []
    for p, tree in trees.items():
        for cls, i, st in _fields(tree):
            if ast.unparse(st.annotation).split("[")[-1].strip("]") in sections:
                continue
            nxt = cls.body[i + 1] if i + 1 < len(cls.body) else None
            if not (isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
                bare.append(f"{p.relative_to(ROOT)}:{st.lineno} {cls.name}.{st.target.id}")
    assert not bare, f"{len(bare)} config fields without a docstring:\n  " + "\n  ".join(bare)


def test_train_help_params_prints_every_knobs_docstring() -> None:
    """`clawloop train --help-params` reads the docstrings (pydantic's use_attribute_docstrings)."""
    from clawloop.config.train import TrainParams, field_help

    rows = field_help(TrainParams())
    assert len(rows) > 50
    assert not [name for name, _, text in rows if not text]
    assert dict((n, t) for n, _, t in rows)["sft.learning_rate"] == "Peak learning rate."
