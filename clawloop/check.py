"""`clawloop check runs/`: every artifact the stages wrote, checked against its schema.

CI runs it after the smoke loop; any violation exits non-zero. Each check names the file and
the field, like the errors of the stages themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clawloop.errors import ClawloopError


@dataclass
class Finding:
    path: Path
    kind: str
    error: str | None
    """None when the artifact is valid."""


def check_pool(path: Path) -> None:
    from clawloop.tasks.pool import read_pool

    read_pool(path)


def check_probe(path: Path) -> None:
    from clawloop.validation.probe import read_probe

    read_probe(path)


def check_trajectories(path: Path) -> None:
    """Every Parquet part has the contract's columns with the contract's types and values."""
    import pyarrow.parquet as pq

    from clawloop.trajectory import (
        EPISODE_SCHEMA,
        OPTIONAL_EPISODE_COLUMNS,
        OUTCOMES,
        STEP_SCHEMA,
        TERMINATIONS,
    )

    parts = sorted(path.rglob("*.parquet"))
    if not parts:
        raise ClawloopError(f"{path}: no Parquet parts")
    for part in parts:
        expected = EPISODE_SCHEMA if part.name.startswith("episodes") else STEP_SCHEMA
        schema = pq.read_schema(part)
        for field in expected:
            if field.name not in schema.names and field.name in OPTIONAL_EPISODE_COLUMNS:
                continue
            if field.name not in schema.names:
                raise ClawloopError(f"{part}: {field.name}: missing column")
            got = schema.field(field.name).type
            if got != field.type and not (got == "null"):
                raise ClawloopError(f"{part}: {field.name}: type {got}, expected {field.type}")
        if expected is EPISODE_SCHEMA:
            table = pq.read_table(part, columns=["outcome", "termination"])
            for col, allowed in (("outcome", OUTCOMES), ("termination", TERMINATIONS)):
                bad = set(table.column(col).to_pylist()) - set(allowed) - {None}
                if bad:
                    raise ClawloopError(f"{part}: {col}: unknown value {sorted(bad)[0]!r}")


def check_diagnosis(path: Path) -> None:
    from clawloop.diagnosis.report import load_report

    load_report(path)


def check_metrics(path: Path) -> None:
    from clawloop.loop import read_metrics

    read_metrics(path)


def check_eval_detail(path: Path) -> None:
    from clawloop.loop import read_eval_detail

    read_eval_detail(path)


def check_checkpoint(path: Path) -> None:
    from clawloop.training.checkpoint import check_base

    check_base(path)


def check_json(path: Path) -> None:
    from clawloop.io import read_json

    if not isinstance(read_json(path), dict):
        raise ClawloopError(f"{path}: expected a JSON object")


def check_validation_report(path: Path) -> None:
    from clawloop.io import read_json

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
    ("?validated/report.json", "validation report", check_validation_report),
    ("?validated/probe.jsonl", "probe table", check_probe),
    ("?validated/probe", "probe trajectories", check_trajectories),
    ("?validation.json", "validation metrics", check_json),
    ("?checkpoint", "checkpoint", check_checkpoint),
    ("?train.json", "training metrics", check_json),
]


def check_runs(runs: str | Path) -> list[Finding]:
    """Check every artifact under `runs`; returns one finding per artifact."""
    runs = Path(runs)
    iters = sorted((int(m.group(1)), d) for d in runs.glob("iter-*")
                   if (m := re.fullmatch(r"iter-(\d+)", d.name)))
    if not iters:
        raise ClawloopError(f"{runs}: no iteration directories (iter-N) to check")
    findings: list[Finding] = []
    for i, d in iters:
        for rel, kind, fn in ITERATION_ARTIFACTS:
            optional_at_zero = rel.startswith("?")
            rel = rel.lstrip("?")
            path = d / rel
            if optional_at_zero and i == 0:
                continue
            if not path.exists():
                findings.append(Finding(path, kind, "missing"))
                continue
            try:
                fn(path)
                findings.append(Finding(path, kind, None))
            except ClawloopError as e:
                findings.append(Finding(path, kind, str(e)))
    transfer = runs / "transfer" / "transfer.json"
    if transfer.exists():
        try:
            check_json(transfer)
            findings.append(Finding(transfer, "transfer result", None))
        except ClawloopError as e:
            findings.append(Finding(transfer, "transfer result", str(e)))
    return findings
