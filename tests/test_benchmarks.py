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


def test_learning_tabulates_a_finished_loop(tmp_path: Path) -> None:
    """`learning.py --runs DIR` (and the tail of `--repro`): per iteration the probe's learnable
    count, the train stage's wall (SFT and GRPO together) with what GRPO had, and held-out pass@1
    with its Wilson interval."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("learning", ROOT / "benchmarks" / "perf" / "learning.py")
    assert spec and spec.loader
    learning = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(learning)

    it = tmp_path / "runs" / "iter-1"
    (it / "eval").mkdir(parents=True)
    (it / "validation.json").write_text(json.dumps({"kept": 240, "probe": {"learnable": 3, "tasks": 32}}))
    (it / "train.json").write_text(json.dumps({"method": "sft+grpo", "sft_runtime_s": 400.0, "grpo_runtime_s": 300.5,
                                               "grpo_tasks": 3, "grpo_reward": 0.75}))
    (it / "metrics.json").write_text(json.dumps({"heldout_pass_rate": 4 / 72, "promoted": True, "wall_s": 180.0}))
    (it / "eval" / "summary.json").write_text(json.dumps(
        {"suites": {"shell-core": {"heldout": True, "episodes": 72, "passed": 4}}}))
    rows = {r["phase"]: r for r in learning.from_runs(tmp_path / "runs")["rows"]}
    assert rows["validate"]["learnable"] == "3/32"
    assert rows["train"]["wall_s"] == 700.5 and rows["train"]["grpo_tasks"] == 3 and rows["train"]["grpo_reward"] == 0.75
    assert rows["evaluate"]["shell-core"] == "4/72 [0.022, 0.134]"

    # With heldout.json per iteration: base and iteration 1 against the last, paired per suite.
    from clawloop.phases.evaluate.gate import heldout_record

    base = {f"shell-core/t{i}": float(i < 2) for i in range(10)} | {"intercode-bash/q0": 0.0}
    it1 = {f"shell-core/t{i}": float(i < 6) for i in range(10)} | {"intercode-bash/q0": 1.0}
    it2 = {f"shell-core/t{i}": float(i < 5) for i in range(10)} | {"intercode-bash/q0": 1.0}
    r0 = heldout_record(0, base, None, promoted=True, vs_policy=None)
    r1 = heldout_record(1, it1, r0, promoted=True, vs_policy=None)
    r2 = heldout_record(2, it2, r1, promoted=False, vs_policy=None)
    for i, r in enumerate((r0, r1, r2)):
        (tmp_path / "runs" / f"iter-{i}").mkdir(parents=True, exist_ok=True)
        (tmp_path / "runs" / f"iter-{i}" / "heldout.json").write_text(r.model_dump_json())
    got = {(c["before"], c["after"], c["suite"]): c for c in learning.from_runs(tmp_path / "runs")["paired"]}
    assert (got["0", "2", "shell-core"]["gained"], got["0", "2", "shell-core"]["lost"]) == (3, 0)
    assert (got["1", "2", "all"]["gained"], got["1", "2", "all"]["lost"]) == (0, 1)
    final = got["0", "policy (iteration 1)", "all"]  # the gate kept iteration 1
    assert (final["gained"], final["lost"], final["paired"]) == (5, 0, 11) and final["p"] == 0.0625


def _drafting() -> object:
    import importlib.util

    sys.path.insert(0, str(ROOT / "benchmarks" / "perf"))
    spec = importlib.util.spec_from_file_location("drafting", ROOT / "benchmarks" / "perf" / "drafting.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_drafting_replay_counts_passes_as_the_decode_loop_does() -> None:
    """Offline replay: a fully guessed reply takes one pass per k + 1 tokens, an unguessable one a
    pass per token; with one candidate the replay's lookup is the loop's own Drafter (with and
    without earlier replies), more candidates never cost passes, and a reply seen before is
    guessed from the history."""
    import numpy as np

    drafting = _drafting()
    rng = np.random.default_rng(0)
    assert drafting.passes([1, 9], list(range(10, 19)), lambda c, k: [list(range(c[-1] + 1, c[-1] + 1 + k))], 2) == 3
    assert drafting.passes([1, 2], [7, 5, 9], lambda c, k: [], 8) == 3
    snippets = [50, 51, 52, 53, 54, 55]
    prompts = [[int(t) for t in rng.integers(0, 30, 60)] + [50, 51] for _ in range(6)]
    replies = [[*p[10:20], 52, 53, 54, *map(int, rng.integers(0, 30, 8)), *p[30:36], 40, 41, 42] for p in prompts]
    for history in (False, True):
        one = drafting.replay(prompts, replies, snippets, 4, history, 1)
        assert one == drafting.drafter_rate(prompts, replies, snippets, 4, history)
        assert drafting.replay(prompts, replies, snippets, 4, history, 3) >= one
    assert 1 < drafting.drafter_rate(prompts, replies, snippets, 4, False) < 5  # some tokens guessed, not all
    assert drafting.drafter_rate(prompts, replies, snippets, 4, True) > drafting.drafter_rate(prompts, replies, snippets, 4, False)


@pytest.mark.slow
def test_drafting_benchmark_runs_on_a_model(tiny_model: Path) -> None:
    p = subprocess.run([sys.executable, "benchmarks/perf/drafting.py", "--model", str(tiny_model), "--prompts", "4",
                        "--max-new-tokens", "8", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    rows = {r["drafter"]: r for r in out["rows"]}
    assert out["replies"] == 4 and rows["context + snippets"]["vs_first_row"] == 1.0
    assert all(r["tokens_per_pass"] >= 1.0 for r in rows.values()) and "best of 6 + earlier" in rows
    assert "tokens/pass" in p.stdout
