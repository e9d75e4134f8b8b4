"""What passes between stages: the files of `runs/`, their schemas, and how a stage reads and
writes them (atomically). Phases import it; it imports only the core and config.

    runs/suites.json              fingerprints of the held-out suites (artifacts.suites)
    runs/iter-N/pool/             pool.jsonl, fresh.jsonl, manifest.json       (synthesize)
    runs/iter-N/validated/        valid.jsonl, rejections.json, probe.jsonl (artifacts.probe),
                                  probe/ and hinted/ trajectories               (validate)
    runs/iter-N/validation.json   the validation's figures
    runs/iter-N/checkpoint/       the trained weights (artifacts.checkpoint)    (train)
    runs/iter-N/playbook/         playbook.json + playbook.md
    runs/iter-N/train-log/, train.json
    runs/iter-N/eval/             trajectories per suite, summary.json (artifacts.metrics.EvalDetail)
    runs/iter-N/policy/           the promoted policy the next iteration starts from   (evaluate)
    runs/iter-N/metrics.json, heldout.json   (artifacts.metrics)
    runs/iter-N/diagnosis/        diagnosis.json (artifacts.diagnosis), diagnosis.md    (diagnose)
    runs/sampled/, runs/transfer/, runs/report/
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class IterDir:
    """runs/iter-N: where the stages of one iteration write (dvc.yaml names the same paths)."""

    path: Path

    @property
    def pool(self) -> Path:
        return self.path / "pool"

    @property
    def validated(self) -> Path:
        return self.path / "validated"

    @property
    def validation_json(self) -> Path:
        return self.path / "validation.json"

    @property
    def checkpoint(self) -> Path:
        return self.path / "checkpoint"

    @property
    def playbook(self) -> Path:
        return self.path / "playbook"

    @property
    def train_log(self) -> Path:
        return self.path / "train-log"

    @property
    def train_json(self) -> Path:
        return self.path / "train.json"

    @property
    def eval(self) -> Path:
        return self.path / "eval"

    @property
    def policy(self) -> Path:
        return self.path / "policy"

    @property
    def metrics_json(self) -> Path:
        return self.path / "metrics.json"

    @property
    def heldout_json(self) -> Path:
        return self.path / "heldout.json"

    @property
    def diagnosis(self) -> Path:
        return self.path / "diagnosis"

    @property
    def diagnosis_json(self) -> Path:
        return self.path / "diagnosis" / "diagnosis.json"
