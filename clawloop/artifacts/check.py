"""`clawloop check PATH`: artifacts checked against their schemas.

PATH is a runs/ tree (every iteration's artifacts), one iteration directory, or any single
artifact — a pool or probe JSONL, eval records, a trajectory directory or Parquet part, a
diagnosis directory, a checkpoint (with its playbook.json, if any), a playbook, metrics.json or
another report — or a directory of such
artifacts (e.g. iter-1/validated). The check is picked by content (`check_path`), so an artifact
copied elsewhere or renamed is still checked as what it is. CI runs it after the smoke loop; any
violation exits non-zero. Each check names the file and the field, like the stages' errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clawloop.artifacts.checkpoint import check_base
from clawloop.artifacts.diagnosis import load_diagnosis
from clawloop.artifacts.metrics import read_eval_detail, read_metrics, read_sampled
from clawloop.artifacts.probe import read_probe
from clawloop.core.agent.playbook import policy_playbook, read_playbook
from clawloop.core.io import iter_jsonl, read_json
from clawloop.core.tasks.pool import parse_task, refused_fields
from clawloop.core.trajectory import check_records, check_trajectories  # noqa: F401  (CHECKS names them)
from clawloop.errors import ClawloopError


@dataclass
class Finding:
    path: Path
    kind: str
    error: str | None
    """None when the artifact is valid."""


def check_pool(path: Path) -> None:
    """Every line parses as a Task (path keys included) and holds nothing clawloop would refuse
    to act on (`pool.refused_fields`)."""
    for lineno, obj in iter_jsonl(path):
        task = parse_task(obj, f"{path}:{lineno}")
        for why in refused_fields(task):
            raise ClawloopError(f"{path}:{lineno}: {why}")


def check_probe(path: Path) -> None:
    read_probe(path)


def check_diagnosis(path: Path) -> None:
    load_diagnosis(path)


def check_metrics(path: Path) -> None:
    read_metrics(path)


def check_eval_detail(path: Path) -> None:
    read_eval_detail(path)


def check_checkpoint(path: Path) -> None:
    """A checkpoint directory, and the playbook it carries if any."""
    check_base(path)
    policy_playbook(path)


def check_playbook(path: Path) -> None:
    read_playbook(path)


def check_json(path: Path) -> None:
    if not isinstance(read_json(path), dict):
        raise ClawloopError(f"{path}: expected a JSON object")


def check_jsonl(path: Path) -> None:
    """Every line is a JSON object (generic JSONL)."""
    for lineno, obj in iter_jsonl(path):
        if not isinstance(obj, dict):
            raise ClawloopError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")


def check_rejections(path: Path) -> None:
    rep = read_json(path)
    for key in ("input", "kept", "rejected"):
        if key not in rep:
            raise ClawloopError(f"{path}: {key}: missing")
    if sum(rep["rejected"].values()) + rep["kept"] != rep["input"]:
        raise ClawloopError(f"{path}: kept + rejected != input")


# (relative path inside an iteration dir, kind, checker); "?" marks artifacts iteration 0 lacks.
ITERATION_ARTIFACTS: list[tuple[str, str, Callable[[Path], None]]] = [
    ("policy", "checkpoint", check_checkpoint),
    ("eval", "trajectories", check_trajectories),
    ("metrics.json", "iteration metrics", check_metrics),
    ("eval/summary.json", "evaluation detail", check_eval_detail),
    ("diagnosis/diagnosis.json", "capability report", check_diagnosis),
    ("?pool/pool.jsonl", "task pool", check_pool),
    ("?pool/manifest.json", "pool manifest", check_json),
    ("?validated/valid.jsonl", "validated pool", check_pool),
    ("?validated/rejections.json", "validation rejections", check_rejections),
    ("?validated/probe.jsonl", "probe table", check_probe),
    ("?validated/probe", "probe trajectories", check_trajectories),
    ("?validation.json", "validation metrics", check_json),
    ("?checkpoint", "checkpoint", check_checkpoint),
    ("?train.json", "training metrics", check_json),
    ("?playbook/playbook.json", "playbook", check_playbook),
]


def _finding(path: Path, kind: str, fn: Callable[[Path], None]) -> Finding:
    try:
        fn(path)
    except ClawloopError as e:
        return Finding(path, kind, str(e))
    return Finding(path, kind, None)


def iteration_number(d: Path) -> int | None:
    m = re.fullmatch(r"iter-(\d+)", d.name)
    return int(m.group(1)) if m else None


def check_iteration(d: Path, number: int | None = None) -> list[Finding]:
    """The artifacts of one iteration directory. Those marked "?" may be missing at iteration 0,
    and when the number is unknown (a copy under another name) they may be missing anywhere."""
    findings: list[Finding] = []
    for rel, kind, fn in ITERATION_ARTIFACTS:
        optional = rel.startswith("?") and number in (0, None)
        path = d / rel.lstrip("?")
        if not path.exists():
            if not optional:
                findings.append(Finding(path, kind, "missing"))
            continue
        findings.append(_finding(path, kind, fn))
    return findings


def check_runs(runs: str | Path) -> list[Finding]:
    """Check every artifact under `runs`; returns one finding per artifact."""
    runs = Path(runs)
    iters = sorted((n, d) for d in runs.glob("iter-*") if (n := iteration_number(d)) is not None)
    if not iters:
        raise ClawloopError(f"{runs}: no iteration directories (iter-N) to check")
    findings = [f for n, d in iters for f in check_iteration(d, n)]
    transfer = runs / "transfer" / "transfer.json"
    if transfer.exists():
        findings.append(_finding(transfer, "transfer result", check_json))
    for which in ("base", "final"):
        sampled = runs / "sampled" / which
        if sampled.exists():
            findings.append(_finding(sampled / "outcomes.json", "sampled evaluation", read_sampled))
            findings += [_finding(d, "trajectories", check_trajectories) for d in sorted(sampled.iterdir()) if d.is_dir()]
    return findings


# ------------------------------------------------------------------ a params file
PARAMS_SUFFIXES = (".yaml", ".yml")
"""What `clawloop check` reads as a params file (params.yaml or a profile) rather than an artifact."""


def check_params(path: str | Path) -> str:
    """One line saying that `path` validates against the params schema (clawloop.config.params), the
    check every stage runs first; a ClawloopError naming the file and the leaf when it does not."""
    from clawloop.config.params import load_params

    params = load_params(path)
    return f"{path}: OK (params of profile {params.profile}, {len(params.loop.iterations)} iterations)"


# ------------------------------------------------------------------ any path, by content
_ITERATION_MARKERS = ("policy", "eval", "metrics.json", "diagnosis", "validated", "checkpoint")


def check_path(path: str | Path) -> list[Finding]:
    """Check whatever `path` is (see the module docstring); ClawloopError when it is nothing
    clawloop wrote (missing, or no artifact inside)."""
    path = Path(path)
    if not path.exists():
        raise ClawloopError(f"{path}: no such file or directory")
    if path.is_file():
        kind = file_kind(path)
        if kind is None:
            raise ClawloopError(f"{path}: not a clawloop artifact (expected .jsonl, .json or .parquet)")
        return [_finding(path, *kind)]
    if any(iteration_number(d) is not None for d in path.glob("iter-*")):
        return check_runs(path)
    number = iteration_number(path)
    if number is not None or sum((path / m).exists() for m in _ITERATION_MARKERS) >= 2:
        return check_iteration(path, number)
    findings = _check_dir(path)
    if not findings:
        raise ClawloopError(f"{path}: no clawloop artifacts to check")
    return findings


def _check_dir(d: Path) -> list[Finding]:
    """One artifact directory (checkpoint, diagnosis, trajectories), else each artifact inside."""
    kind = dir_kind(d)
    if kind is not None:
        target = d / "diagnosis.json" if kind[0] == "capability report" else d
        return [_finding(target, *kind)]
    findings: list[Finding] = []
    children = sorted(p for p in d.iterdir() if not p.name.startswith("."))
    if any(p.suffix == ".parquet" for p in children):  # a rollout dir beside other files
        findings.append(_finding(d, "trajectories", check_trajectories))
    for child in children:
        if child.is_dir():
            findings += _check_dir(child)
        elif child.suffix != ".parquet" and (kind := file_kind(child)) is not None:
            findings.append(_finding(child, *kind))
    return findings


def dir_kind(d: Path) -> tuple[str, Callable[[Path], None]] | None:
    """What a directory is as a whole, if it is one artifact."""
    if (d / "config.json").is_file():
        return "checkpoint", check_checkpoint
    if (d / "diagnosis.json").is_file():
        return "capability report", check_diagnosis
    files = [p for p in d.rglob("*") if p.is_file() and not p.name.startswith(".")]
    if files and all(p.suffix == ".parquet" for p in files):
        return "trajectories", check_trajectories
    return None


def file_kind(path: Path) -> tuple[str, Callable[[Path], None]] | None:
    """What a file is, by its content (the first line of a JSONL that parses; the keys of a
    JSON object); None for files clawloop does not write."""
    if path.suffix == ".parquet":
        return "trajectory part", check_trajectories
    if path.suffix == ".jsonl":
        return _jsonl_kind(path)
    if path.suffix == ".json":
        return _json_kind(path)
    return None


def _jsonl_kind(path: Path) -> tuple[str, Callable[[Path], None]]:
    keys = _first_object_keys(path)
    if keys is None:  # nothing readable: the name is all there is; the check reports the bad lines
        return ("probe table", check_probe) if "probe" in path.name else ("task pool", check_pool)
    if "instruction" in keys:
        return "task pool", check_pool
    if {"task_id", "label", "passes"} <= keys:
        return "probe table", check_probe
    if {"outcome", "agent"} <= keys:
        return "eval records", check_records
    return "JSON lines", check_jsonl


def _json_kind(path: Path) -> tuple[str, Callable[[Path], None]]:
    import orjson

    try:
        obj = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        return "JSON", check_json  # reports the error
    keys = set(obj) if isinstance(obj, dict) else set()
    if path.name == "playbook.json" or {"token_budget", "entries"} <= keys:
        return "playbook", check_playbook
    if "schema_version" in keys and {"cells", "failure_modes"} & keys:
        return "capability report", check_diagnosis
    if {"heldout_pass_rate", "promoted"} <= keys:
        return "iteration metrics", check_metrics
    if {"input", "kept", "rejected"} <= keys:
        return "validation rejections", check_rejections
    return "JSON", check_json


def _first_object_keys(path: Path, lines: int = 50) -> set[str] | None:
    """The keys of the first JSON object among the first `lines` non-blank lines, or None."""
    import orjson

    with path.open("rb") as f:
        for n, line in enumerate(f):
            if n >= lines:
                break
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                return set(obj)
    return None
