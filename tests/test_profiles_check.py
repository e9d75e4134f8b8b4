"""`clawloop check profiles/<each>.yaml` (#79): every profile, the GPU ones included (which no
session here runs end to end), passes the params schema that every stage checks first, in one line;
a profile with a wrong key fails in one line naming it. tests/test_params.py loads the same files
through the library; this is the command a user runs after editing a copy."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clawloop.cli import app

ROOT = Path(__file__).resolve().parents[1]
PROFILES = sorted((ROOT / "profiles").glob("*.yaml"))


def test_the_gpu_profiles_are_among_them() -> None:
    assert {"gpu-qwen2.5.yaml", "gpu-qwen3.yaml", "smoke.yaml"} <= {p.name for p in PROFILES}


@pytest.mark.parametrize("path", [ROOT / "params.yaml", *PROFILES], ids=lambda p: p.name)
def test_clawloop_check_passes_every_profile(path: Path) -> None:
    res = CliRunner().invoke(app, ["check", str(path)])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    name = yaml.safe_load(path.read_text())["profile"]
    assert lines == [f"{path}: OK (params of profile {name}, {_iterations(path)} iterations)"], res.output
    if path.parent.name == "profiles":
        assert name == path.stem  # the profile names itself as its file does (the report shows the name)


def test_a_wrong_key_in_a_gpu_profile_fails_in_one_line(tmp_path: Path) -> None:
    raw = yaml.safe_load((ROOT / "profiles" / "gpu-qwen3.yaml").read_text())
    raw["train"]["grpo"]["use_vlm"] = True
    bad = tmp_path / "gpu.yaml"
    bad.write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(app, ["check", str(bad)])
    assert res.exit_code == 1
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "train.grpo.use_vlm: unknown key" in lines[0], res.output


def _iterations(path: Path) -> int:
    return len(yaml.safe_load(path.read_text())["loop"]["iterations"])
