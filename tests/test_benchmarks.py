"""The perf scripts run as a user runs them: `benchmarks/perf/rollout.py --compare --heldout`
on a tiny model. Speed figures are not asserted (tests stay deterministic); what they stand on is:
every candidate is measured, the decode loop's greedy replies equal transformers' `generate`,
and the held-out evaluation covers the whole suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_rollout_compare_reports_every_candidate_and_the_heldout_pass(tiny_model: Path) -> None:
    cmd = [sys.executable, "benchmarks/perf/rollout.py", "--compare", "--model", str(tiny_model),
           "--max-new-tokens", "12", "--threads", "1", "--candidates", "hf-generate,hf-fp32,hf-w8a8",
           "--heldout", "--json"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    rows = {r["candidate"]: r for r in out["rows"]}
    assert list(rows) == ["hf-generate", "hf-fp32", "hf-w8a8"]
    for r in rows.values():
        assert r["b1_tokens_per_s"] > 0 and r["b32_tokens_per_s"] > 0
        assert r["heldout_tasks"] == 72 and 0 <= r["heldout_passed"] <= 72
    # The baseline agrees with itself, and the decode loop is an exact re-implementation of it.
    assert rows["hf-generate"]["agree"] == rows["hf-fp32"]["agree"] == 44
    assert rows["hf-generate"]["b1_speedup"] == 1.0
    # The table a reader sees names the same candidates.
    assert "hf-w8a8" in p.stdout and "held-out" in p.stdout
