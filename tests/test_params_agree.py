"""params.yaml and the schema agree leaf for leaf: the schema's defaults (clawloop.config.params.Params)
are the values the loop was measured with, and params.yaml states them (#77)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clawloop.config.params import Params, load_params

ROOT = Path(__file__).resolve().parents[1]

DELIBERATE: dict[str, str] = {}
"""params.yaml leaves that are deliberately not the schema's default, each with its reason (none)."""


def leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted leaf -> value of a model_dump (a list is one leaf: eval.suites compares whole)."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(leaves(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: value}


def first_difference(yaml_values: dict[str, Any], defaults: dict[str, Any]) -> str | None:
    """'LEAF: params.yaml X, schema default Y' for the first leaf (in order) that differs, else None."""
    missing = object()
    for key in [*yaml_values, *(k for k in defaults if k not in yaml_values)]:
        if key in DELIBERATE:
            continue
        got, want = yaml_values.get(key, missing), defaults.get(key, missing)
        if got != want:
            return f"{key}: params.yaml {got!r}, schema default {want!r}"
    return None


def test_params_yaml_states_the_schema_defaults() -> None:
    yaml_values = leaves(load_params(ROOT / "params.yaml").model_dump(mode="json"))
    defaults = leaves(Params().model_dump(mode="json"))
    assert (diff := first_difference(yaml_values, defaults)) is None, diff


def test_a_disagreement_is_named_with_both_values() -> None:
    a = leaves(Params().model_dump(mode="json"))
    b = dict(a, **{"rollout.max_new_tokens": 96})
    assert first_difference(b, a) == "rollout.max_new_tokens: params.yaml 96, schema default 128"


def test_deliberate_exceptions_are_params_yaml_leaves_with_a_reason() -> None:
    known = leaves(Params().model_dump(mode="json"))
    assert all(key in known and reason for key, reason in DELIBERATE.items())


def test_clawloop_check_validates_a_params_file_in_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clawloop.cli import app

    runner = CliRunner()
    for f in [ROOT / "params.yaml", *sorted((ROOT / "profiles").glob("*.yaml"))]:
        res = runner.invoke(app, ["check", str(f)])
        assert res.exit_code == 0 and res.output.count("\n") == 1 and ": OK" in res.output, (f, res.output)
    bad = tmp_path / "bad.yaml"
    bad.write_text("rollout:\n  batch: zero\n")
    res = runner.invoke(app, ["check", str(bad)])
    assert res.exit_code == 1 and res.output.strip().count("\n") == 0
    assert f"{bad}: rollout.batch:" in res.output
