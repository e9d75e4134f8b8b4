"""benchmarks/synth-heldout: the loop's own distribution, held out by seed and by validation."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from clawloop.artifacts.suites import heldout_tasks
from clawloop.config.params import load_params
from clawloop.config.synthesis import Forms
from clawloop.core.tasks.suite import load_suite
from clawloop.phases.evaluate.agent_eval import EvalConfig, evaluate
from clawloop.phases.synthesize.procedural.generate import HELDOUT_NAMESPACE, synthesize
from clawloop.phases.synthesize.skills import families
from clawloop.phases.synthesize.steering import Plan
from clawloop.phases.validate.agent_free import (
    default_heldout,
    default_heldout_instances,
    exact_key,
    validate_pool,
)

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "benchmarks" / "synth-heldout"


@pytest.fixture(scope="module")
def suite() -> list:
    return load_suite(SUITE).tasks


def test_the_committed_suite_is_what_the_generators_make() -> None:
    """A generator change shows up here: rerun make.py, review the diff, commit it."""
    p = subprocess.run([sys.executable, str(SUITE / "make.py"), "--check"], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    manifest = json.loads((SUITE / "MANIFEST.json").read_text())
    assert manifest["generators"] == {n: f.generator_id for n, f in families().items()}
    assert manifest["namespace"] == HELDOUT_NAMESPACE


def test_stratified_over_skills_and_levels_one_to_four(suite: list) -> None:
    cells = Counter((t.skill, t.level) for t in suite)
    assert len(suite) >= 200
    assert set(cells) == {(s, lv) for s in families() for lv in (1, 2, 3, 4)}
    assert set(cells.values()) == {4}
    assert all(t.provenance.seed is not None and t.provenance.routine == "procedural" for t in suite)


def test_synthesis_never_draws_its_instances(suite: list) -> None:
    """The loop synthesizes in the empty namespace: even at the suite's own seed and iteration and
    the same plan, no task is one of the suite's."""
    plan = Plan(quotas={(s, lv): 4 for s in families() for lv in (1, 2, 3, 4)})
    loop = synthesize(plan, 0, 0, forms=Forms(conversational=0.5))
    held = {exact_key(t) for t in suite}
    assert not held & {exact_key(t) for t in loop}
    assert {exact_key(t) for t in synthesize(plan, 0, 0, namespace=HELDOUT_NAMESPACE, forms=Forms(conversational=0.5))} == held


def test_validation_drops_the_same_task_and_keeps_its_template_siblings(suite: list) -> None:
    """An instance of the suite in a pool is dropped as heldout_overlap; a task of the same template
    (what every pool holds) is kept."""
    leaked = suite[0]
    plan = Plan(quotas={(leaked.skill, leaked.level): 1})
    sibling = synthesize(plan, 7, 1)[0]
    kept, report = validate_pool([leaked, sibling], "bwrap", 1, heldout_instances=suite)
    assert [t.id for t in kept] == [sibling.id]
    assert report["rejected"]["heldout_overlap"] == 1
    assert "the same task" in report["examples"]["heldout_overlap"][0]["detail"]


def test_the_loop_and_the_cli_keep_it_off_by_the_same_task_only() -> None:
    params = load_params(ROOT / "params.yaml")
    (entry,) = [s for s in params.eval.suites if s.name == "synth-heldout"]
    assert entry.heldout and entry.overlap == "same_task" and Path(entry.path) == Path("benchmarks/synth-heldout")
    assert len(heldout_tasks(params, None, overlap="same_task")) == 224
    assert all(t.source != "procedural" for t in heldout_tasks(params, None))  # the n-gram side: shell-core
    assert SUITE.resolve() not in [p.resolve() for p in default_heldout()]
    assert [p.resolve() for p in default_heldout_instances()] == [SUITE.resolve()]


def test_references_pass_and_a_noop_fails_on_a_slice(suite: list) -> None:
    """One task per skill at level 4 (the hardest level here); make.py's full run is 224/224 and 0/224."""
    chosen = sorted({t.skill: t for t in suite if t.level == 4}.values(), key=lambda t: t.skill)
    names = [d for d in sorted(SUITE.iterdir()) if d.is_dir() and d.name.endswith("-L4-1")]
    assert len(names) == len(chosen) == len(families())
    oracle, _ = evaluate(names, "oracle", EvalConfig(backend="bwrap", jobs=2))
    noop, _ = evaluate(names, "noop", EvalConfig(backend="bwrap", jobs=2))
    assert [r.outcome for r in oracle] == ["passed"] * len(names)
    assert [r.outcome for r in noop] == ["failed"] * len(names)
