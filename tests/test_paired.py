"""Paired held-out evidence (#35): the exact test, flips, the bootstrap, the paired gate, the
heldout.json chain across iterations, optional suites and published baselines in the report."""

import math
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from clawloop.artifacts import metrics as artifact_metrics
from clawloop.config.params import EvalParams, GateParams
from clawloop.core import paired
from clawloop.core.io import read_json, write_json
from clawloop.phases.evaluate import gate as gating

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "intercode-mini"


def _binom_two_sided(b: int, c: int) -> float:
    """The exact McNemar p written out independently: 2 · P(X <= min) under Binomial(b + c, 1/2)."""
    n, k = b + c, min(b, c)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


@pytest.mark.parametrize(("better", "worse"), [(0, 0), (0, 3), (1, 4), (2, 10), (7, 7), (12, 3)])
def test_sign_test_matches_the_binomial(better: int, worse: int) -> None:
    p = paired.sign_test_p(better, worse)
    assert p == pytest.approx(_binom_two_sided(better, worse) if better + worse else 1.0)
    n = better + worse
    less = sum(math.comb(n, i) for i in range(better + 1)) / 2 ** n if n else 1.0
    assert paired.sign_test_p(better, worse, alternative="less") == pytest.approx(less)
    assert paired.sign_test_p(0, 3, alternative="less") == pytest.approx(0.125)
    with pytest.raises(ValueError, match="alternative"):
        paired.sign_test_p(1, 1, alternative="bigger")


def test_compare_counts_flips_and_leaves_out_unpaired_tasks() -> None:
    before = {"s/a": 1.0, "s/b": 0.0, "s/c": 0.0, "s/d": 1.0, "s/gone": 1.0}
    after = {"s/a": 1.0, "s/b": 1.0, "s/c": 0.0, "s/d": 0.0, "s/new": 0.0}
    c = paired.compare(before, after)
    assert (c.paired, c.unpaired, c.both_passed, c.both_failed, c.gained, c.lost) == (4, 2, 1, 1, 1, 1)
    assert c.gained_tasks == ("s/b",) and c.lost_tasks == ("s/d",)
    assert c.before_rate == c.after_rate == 0.5 and c.diff == 0.0 and c.p_two_sided == 1.0
    assert "+0 tasks of 4 (1 gained, 1 lost)" in c.words()


def test_bootstrap_interval_is_seeded_and_brackets_the_difference() -> None:
    before = {f"s/{i}": float(i % 3 == 0) for i in range(72)}
    after = {k: 1.0 if int(k[2:]) % 4 == 0 else v for k, v in before.items()}
    c = paired.compare(before, after)
    assert c.gained > 0 and c.lost == 0
    assert c.diff_low <= c.diff <= c.diff_high and c.diff_low > 0      # only gains: the interval excludes 0
    assert paired.compare(before, after) == c                          # same seed, same interval
    assert paired.bootstrap_interval([]) == (0.0, 0.0)


@dataclass
class _Ep:
    task_id: str
    name: str
    outcome: str


def test_outcomes_are_per_task_shares_of_graded_samples() -> None:
    eps = [_Ep("1", "a", "passed"), _Ep("1", "a", "failed"), _Ep("2", "b", "error"), _Ep("3", "c", "failed")]
    assert paired.outcomes_of(eps, "shell-core") == {"shell-core/a": 0.5, "shell-core/c": 0.0}


def test_gate_decides_on_the_paired_comparison() -> None:
    policy = {f"s/{i}": float(i < 10) for i in range(72)}
    wobble = {**policy, "s/0": 0.0}                                       # 1 lost: a raw 0.02 tolerance rejects
    assert gating.gate(wobble, policy, 0.2)[0] is True
    worse = {**policy, "s/0": 0.0, "s/1": 0.0, "s/2": 0.0}                # 3 lost, 0 gained: p = 0.125
    promoted, cmp, _ = gating.gate(worse, policy, 0.2)
    assert promoted is False and cmp is not None and cmp.p_worse == pytest.approx(0.125)
    assert gating.gate(worse, policy, 0.1)[0] is True                       # alpha decides
    assert gating.gate(worse, policy, 0.2, enabled=False)[0] is True
    assert gating.gate(worse, None, 0.2) == (True, None, [])                  # iteration 0: nothing to beat
    assert gating.gate({}, policy, 0.2)[0] is False                         # nothing graded (all errors)
    better = {**policy, **{f"s/{i}": 1.0 for i in range(10, 20)}}
    assert gating.gate(better, policy, 0.2)[0] is True


def test_gate_refuses_a_collapse_of_one_suite_that_the_pooled_test_hides() -> None:
    policy = {**{f"big/{i}": float(i < 20) for i in range(112)}, **{f"small/{i}": float(i < 3) for i in range(50)}}
    # 6 gained on the big suite, all 3 passes of the small one lost: pooled 6 vs 3, p_worse = 0.91
    candidate = {**policy, **{f"big/{i}": 1.0 for i in range(20, 26)}, **{f"small/{i}": 0.0 for i in range(3)}}
    assert gating.gate(candidate, policy, 0.2)[0] is True
    assert gating.worse_suites(candidate, policy, 0.2) == ["small"]      # 0 vs 3: p = 0.125
    assert gating.gate(candidate, policy, 0.2, suite_alpha=0.2)[0] is False
    assert gating.gate(candidate, policy, 0.2, suite_alpha=0.1)[0] is True
    assert gating.worse_suites(candidate, policy, None) == []


def _figures(passed: int, n: int = 4) -> dict[str, artifact_metrics.SuiteMetrics]:
    return {"shell-core": artifact_metrics.SuiteMetrics(tasks=n, episodes=n, passed=passed, errors=0, skipped=0,
                                            pass_at_1=passed / n, pass_at_k=passed / n, mean_reward=0.0, graded=n)}


def _verdicts(passing: set[int], n: int = 4) -> dict[str, float]:
    return {f"shell-core/t{i}": float(i in passing) for i in range(n)}


def test_gate_and_promote_chains_heldout_records_and_hands_the_winner_over(tmp_path: Path) -> None:
    gate = GateParams(alpha=0.2)
    dirs = {}
    for it in range(3):
        dirs[it] = tmp_path / f"iter-{it}"
        (dirs[it] / "checkpoint").mkdir(parents=True)
        (dirs[it] / "checkpoint" / "weights").write_text(f"iteration {it}")
    (dirs[0] / "policy").mkdir()
    (dirs[0] / "policy" / "weights").write_text("iteration 0")
    gating.gate_and_promote(0, _figures(1), _verdicts({0}), checkpoint=dirs[0] / "policy", previous=None, it_dir=dirs[0],
                gate_params=gate, wall_s=1.0)
    row = gating.gate_and_promote(1, _figures(3), _verdicts({0, 1, 2}), checkpoint=dirs[1] / "checkpoint", previous=dirs[0],
                      it_dir=dirs[1], gate_params=gate, wall_s=1.0)
    assert row.promoted and (row.vs_base_gained, row.vs_base_lost) == (2, 0) and row.vs_base_p == 0.5
    assert (dirs[1] / "policy" / "weights").read_text() == "iteration 1"
    # Iteration 2 loses all three of iteration 1's passes: rejected, iteration 1 stays the policy.
    row = gating.gate_and_promote(2, _figures(0), _verdicts(set()), checkpoint=dirs[2] / "checkpoint", previous=dirs[1],
                      it_dir=dirs[2], gate_params=gate, wall_s=1.0)
    assert not row.promoted and row.policy_from == 1 and row.gate_p_worse == pytest.approx(0.125)
    assert row.gate_worse_suites == ["shell-core"]                     # the one suite says so too
    assert (dirs[2] / "policy" / "weights").read_text() == "iteration 1"
    rec = artifact_metrics.read_heldout(dirs[2] / "heldout.json")
    assert rec.base == _verdicts({0}) and rec.policy == _verdicts({0, 1, 2}) and rec.policy_from == 1
    assert rec.vs_base["lost"] == 1 and rec.vs_policy["lost"] == 3
    assert read_json(dirs[2] / "metrics.json")["best_heldout_pass_rate"] == 0.75


def test_heldout_record_names_the_file_and_field_when_malformed(tmp_path: Path) -> None:
    from clawloop.errors import ClawloopError

    write_json(tmp_path / "heldout.json", {"iteration": 1, "checkpoint": {}, "policy": {}, "base": {}})
    with pytest.raises(ClawloopError, match=r"heldout.json: policy_from"):
        artifact_metrics.read_heldout(tmp_path / "heldout.json")


def test_an_optional_suite_that_is_absent_is_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clawloop.artifacts.suites import build, eval_suites, heldout_tasks

    params = SimpleNamespace(eval=EvalParams.model_validate({"suites": [
        {"name": "mini", "path": str(ROOT / "benchmarks" / "shell-core"), "format": "harbor", "max_tasks": 2},
        {"name": "intercode-bash", "path": str(tmp_path / "absent"), "format": "intercode", "optional": True}]}),
        validation=SimpleNamespace(heldout=[]))
    assert [name for name, _, _ in eval_suites(params, None)] == ["mini"]
    assert "benchmarks/intercode/fetch.py" in capsys.readouterr().out
    assert list(build(params)["suites"]) == [str(ROOT / "benchmarks" / "shell-core")]
    assert len(heldout_tasks(params, None)) == 72          # held-out eval suites are decontaminated against


def test_published_results_are_counted_on_the_evaluated_tasks() -> None:
    from clawloop.core.tasks.intercode_published import published_on, published_results

    runs = published_results(FIXTURE)
    assert sum(runs["gpt-4"].values()) == 6 and len(runs["gpt-4"]) == 11   # fs1-00, -02, ..., fs2-00 succeed
    assert published_on(FIXTURE, ["fs1-00", "fs1-01", "fs1-02", "fs2-00"]) == {
        "GPT-4": {"passed": 3, "tasks": 4, "all_passed": 6, "all_tasks": 11}}
    assert published_on(FIXTURE, ["fs1-01", "fs3-00"]) == {  # a task the run never saw counts for nobody
        "GPT-4": {"passed": 0, "tasks": 1, "all_passed": 6, "all_tasks": 11}}


def _evaluated(runs: Path, it: int, suites: dict[str, artifact_metrics.SuiteMetrics], verdicts: dict[str, float]) -> None:
    """What evaluate@it leaves: eval/summary.json, then the gate (gate_and_promote: heldout.json, metrics.json)."""
    d = runs / f"iter-{it}"
    artifact_metrics.write_metrics(d / "eval" / "summary.json", artifact_metrics.EvalDetail(iteration=it, suites=suites,
                                                                     episodes_per_s=1.0, wall_s=1.0))
    (d / "checkpoint").mkdir(parents=True)
    gating.gate_and_promote(it, suites, verdicts, checkpoint=d / "checkpoint", previous=runs / "iter-0" if it else None,
                it_dir=d, gate_params=GateParams(), wall_s=1.0)


def test_report_states_the_paired_gain_and_the_published_baselines(tmp_path: Path) -> None:
    from clawloop.report.collect import collect
    from clawloop.report.render import context, render

    runs = tmp_path / "runs"
    base, final = _verdicts({0}, 8), _verdicts({0, 1, 2, 3, 4}, 8)
    for it, (verdicts, passed) in enumerate([(base, 1), (final, 5)]):
        suites = _figures(passed, 8)
        suites["intercode-bash"] = suites["shell-core"].model_copy(update={
            "baselines": {"GPT-4": {"passed": 4, "tasks": 8, "all_passed": 97, "all_tasks": 200}}})
        _evaluated(runs, it, suites, verdicts)
    html, md = render(context(collect(runs), {}, viewer=None, ablations=[]))
    assert "against iteration 0: +4 tasks of 8 (4 gained, 0 lost), exact McNemar p = 0.125" in md
    assert "not distinguishable from chance" in md
    assert "| GPT-4 (published, 10 turns) | 4/8 = 0.500" in md and "97/200 = 48.5%" in md
    assert "Paired held-out evidence" in html and "shell-core/t1" in html        # the flips, by task
    assert html.index("+4 tasks of 8") < html.index("Diagnosis → synthesis")    # on the first screen
    assert "per level" not in md  # shell-core's names carry no level: no per-level table


def test_compare_command_pairs_two_evaluations_per_suite(tmp_path: Path) -> None:
    import json as _json

    from typer.testing import CliRunner

    from clawloop.cli import app

    gate = GateParams(alpha=0.2)
    before = {"shell-core/a": 0.0, "shell-core/b": 0.0, "shell-core/c": 1.0, "intercode-bash/x": 0.0}
    after = {"shell-core/a": 1.0, "shell-core/b": 1.0, "shell-core/c": 0.0, "intercode-bash/x": 1.0,
             "intercode-bash/y": 1.0}  # y: graded only after (an error before)
    for name, verdicts in (("a", before), ("b", after)):
        (tmp_path / name / "policy").mkdir(parents=True)
        gating.gate_and_promote(0, _figures(1), verdicts, checkpoint=tmp_path / name / "policy", previous=None,
                    it_dir=tmp_path / name, gate_params=gate, wall_s=1.0)
    res = paired.compare_suites(before, after)
    assert list(res) == ["intercode-bash", "shell-core", "all"]
    assert (res["shell-core"].gained, res["shell-core"].lost, res["all"].gained, res["all"].unpaired) == (2, 1, 3, 1)
    runner = CliRunner()
    out = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b" / "heldout.json"), "--json"])
    assert out.exit_code == 0, out.output
    got = _json.loads(out.output.strip().splitlines()[-1])
    assert got["shell-core"]["gained"] == 2 and got["all"]["p_two_sided"] == pytest.approx(0.625)
    table = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--tasks"])
    assert table.exit_code == 0 and "2/3" in table.output and "1 tasks graded in only one" in table.output
    assert "gained: intercode-bash/x, shell-core/a, shell-core/b" in table.output
    # per level: the levels the records carry (synth-heldout's names are content ids)
    lv_before = {"synth-heldout/p": 0.0, "synth-heldout/q": 1.0, "synth-heldout/r": 0.0, "intercode-bash/x": 0.0,
                 "shell-core/s": 0.0, "shell-core/t": 1.0}  # shell-core: evaluated before only
    lv_after = {"synth-heldout/p": 1.0, "synth-heldout/q": 1.0, "synth-heldout/r": 1.0, "intercode-bash/x": 1.0}
    levels = {"synth-heldout/p": 1, "synth-heldout/q": 1, "synth-heldout/r": 3, "intercode-bash/x": 1,
              "shell-core/s": 1, "shell-core/t": 2}
    for name, verdicts in (("c", lv_before), ("d", lv_after)):
        (tmp_path / name / "policy").mkdir(parents=True)
        gating.gate_and_promote(0, _figures(1), verdicts, checkpoint=tmp_path / name / "policy", previous=None,
                    it_dir=tmp_path / name, gate_params=gate, wall_s=1.0, levels=levels)
    got = _json.loads(runner.invoke(app, ["compare", str(tmp_path / "c"), str(tmp_path / "d"), "--levels",
                                          "--json"]).output.strip().splitlines()[-1])
    assert got["by_level"]["synth-heldout"]["1"]["gained"] == 1 and got["by_level"]["synth-heldout"]["3"]["gained"] == 1
    assert "intercode-bash" not in got["by_level"]  # one level: no table of its own
    assert "shell-core" not in got["by_level"]  # graded in one run only: nothing paired at any level
    shown = runner.invoke(app, ["compare", str(tmp_path / "c"), str(tmp_path / "d"), "--levels"])
    assert shown.exit_code == 0 and "synth-heldout per level" in shown.output and "1/2" in shown.output
    assert "per level" not in runner.invoke(app, ["compare", str(tmp_path / "c"), str(tmp_path / "d")]).output
    bad = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "missing")])
    assert bad.exit_code != 0


def test_permutation_p_is_the_sign_test_with_one_sample_and_weighs_moves_with_several() -> None:
    import random

    for gained, lost in [(0, 0), (4, 0), (9, 2), (12, 3)]:  # 1/0 outcomes: exactly McNemar's
        diffs = [1.0] * gained + [-1.0] * lost + [0.0] * 5
        assert paired.permutation_p(diffs) == pytest.approx(paired.sign_test_p(gained, lost))
    # k = 4 samples: twelve tasks 1/4 -> 4/4 and twelve 2/4 -> 1/4 are a 12-12 tie for the sign test
    # (p = 1) but a clear gain in pass rate, which the permutation test sees
    diffs = [0.75] * 12 + [-0.25] * 12
    assert paired.sign_test_p(12, 12) == 1.0 and paired.permutation_p(diffs) < 0.05
    # Monte Carlo above the exact limit: seeded, close to the exact value of a large sign test
    many = [1.0] * 30 + [-1.0] * 14
    assert paired.permutation_p(many) == paired.permutation_p(many)
    assert abs(paired.permutation_p(many) - paired.sign_test_p(30, 14)) < 0.01
    rng = random.Random(1)
    noise = [rng.choice([-0.25, 0.25, 0.0]) for _ in range(60)]
    assert paired.permutation_p(noise) > 0.05


def test_per_level_evidence_for_a_suite_whose_names_carry_the_level() -> None:
    base = {f"synth-heldout/files-L{lv}-{i}": 0.0 for lv in (1, 3) for i in range(1, 5)} | {"shell-core/x": 0.0}
    final = dict(base) | {"synth-heldout/files-L3-1": 1.0, "synth-heldout/files-L3-2": 1.0}
    levels = paired.by_level(base, final, "synth-heldout")
    assert sorted(levels) == [1, 3]
    assert (levels[1].gained, levels[3].gained, levels[3].paired) == (0, 2, 4)
    assert levels[3].after_rate == 0.5 and paired.by_level(base, final, "shell-core") == {}


def test_per_level_evidence_from_recorded_levels_where_names_are_content_ids() -> None:
    # synth-heldout's tasks are named by their content id: the level comes from the episodes
    from types import SimpleNamespace as Ep

    eps = [Ep(task_id=f"{i:016x}", name=f"{i:016x}", skill="files", level=1 + i % 2, outcome="failed")
           for i in range(8)] + [Ep(task_id="ic", name="fs1-3", skill="general", level=1, outcome="passed")]
    levels = paired.levels_of(eps, "synth-heldout")
    assert len(levels) == 8 and set(levels.values()) == {1, 2}  # an unleveled benchmark task is left out
    base = paired.outcomes_of(eps, "synth-heldout")
    final = base | {f"synth-heldout/{1:016x}": 1.0, f"synth-heldout/{3:016x}": 1.0}
    assert paired.by_level(base, final, "synth-heldout") == {}  # the names carry no level
    got = paired.by_level(base, final, "synth-heldout", levels)
    assert sorted(got) == [1, 2] and (got[1].gained, got[2].gained, got[2].paired) == (0, 2, 4)


def test_report_shows_synth_heldout_per_level(tmp_path: Path) -> None:
    from clawloop.report.collect import collect
    from clawloop.report.render import context, render

    runs = tmp_path / "runs"
    names = [f"synth-heldout/csv-L{lv}-{i}" for lv in (1, 4) for i in (1, 2)]
    base = {n: 0.0 for n in names}
    final = base | {"synth-heldout/csv-L4-1": 1.0, "synth-heldout/csv-L4-2": 1.0}
    for it, verdicts in enumerate([base, final]):
        _evaluated(runs, it, {"synth-heldout": _figures(sum(map(int, verdicts.values())), 4)["shell-core"]}, verdicts)
    html, md = render(context(collect(runs), {}, viewer=None, ablations=[]))
    assert "synth-heldout per level" in md and "synth-heldout per level" in html
    per_suite = read_json(runs / "iter-1" / "metrics.json")["vs_base_suites"]["synth-heldout"]
    assert (per_suite["base_rate"], per_suite["rate"], per_suite["diff"]) == (0.0, 0.5, 0.5)
    assert per_suite["p"] == 0.5 and per_suite["p_permutation"] == 0.5  # 2 gained of 4: not yet evidence
    assert "| 4 | 2 | 0.000 | 1.000 | 2 | 0 |" in md and "| 1 | 2 | 0.000 | 0.000 | 0 | 0 |" in md
