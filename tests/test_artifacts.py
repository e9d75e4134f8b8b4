"""clawloop.artifacts.IterDir names the paths dvc.yaml gives the stages of one iteration."""

from __future__ import annotations

from pathlib import Path

import yaml

from clawloop.artifacts import IterDir

ROOT = Path(__file__).resolve().parents[1]


def _dvc_paths() -> set[str]:
    """Every path a stage names (deps, outs, metrics), an iteration dir written as iter-${key}."""
    out: set[str] = set()
    for body in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].values():
        stage = body.get("do", body)
        for key in ("deps", "outs", "metrics"):
            for entry in stage.get(key, []):
                path = next(iter(entry)) if isinstance(entry, dict) else entry
                out.add(path.replace("${item.prev}", "${key}"))  # the previous iteration's dir, same layout
    return out


def test_iter_dir_names_the_paths_of_dvc_yaml() -> None:
    it = IterDir(Path("runs/iter-${key}"))  # dvc.yaml's template variable
    properties = [name for name, v in vars(IterDir).items() if isinstance(v, property)]
    assert len(properties) >= 12
    paths = _dvc_paths()
    missing = [f"{name}: {getattr(it, name).as_posix()}" for name in properties
               if getattr(it, name).as_posix() not in paths]
    assert not missing, "IterDir paths dvc.yaml does not name:\n  " + "\n  ".join(missing)


def test_iter_dir_of_an_iteration() -> None:
    assert IterDir(Path("runs/iter-2")).policy == Path("runs/iter-2/policy")
    assert IterDir(Path("r/iter-1")).diagnosis_json == Path("r/iter-1/diagnosis/diagnosis.json")
