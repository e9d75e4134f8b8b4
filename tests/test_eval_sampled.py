"""The sampled base-vs-final evaluation (eval.sampled, stages/evaluate_sampled.py): its params, its
paired comparison, and its refusal of inputs that cannot be compared."""

import pytest

from clawloop.artifacts.metrics import SampledEval, SuiteMetrics, read_sampled, write_metrics
from clawloop.config.params import EvalParams
from clawloop.errors import ClawloopError
from clawloop.phases.evaluate.sampled import vs_base


def _figures(n: int) -> SuiteMetrics:
    return SuiteMetrics(tasks=n, episodes=4 * n, passed=0, errors=0, skipped=0, pass_at_1=0.0, pass_at_k=0.0,
                        mean_reward=0.0)


def _eval(outcomes: dict[str, float], k: int = 4, temperature: float = 0.7) -> SampledEval:
    return SampledEval(k=k, temperature=temperature, suites={"synth-heldout": _figures(len(outcomes))},
                       outcomes=outcomes)


def test_vs_base_reads_how_far_each_task_moved_per_suite_and_level() -> None:
    names = [f"synth-heldout/files-L{lv}-{i}" for lv in (1, 3) for i in range(12)]
    base = {n: 0.25 for n in names}
    # every level-3 task rises by 3 of 4 samples, level 1 stays: the sign test sees 12 flips, the
    # permutation test the size of each; level 1 must show no change
    final = {n: (1.0 if "-L3-" in n else 0.25) for n in names}
    got = vs_base(_eval(base), _eval(final))
    row = got["synth-heldout"]
    assert got["k"] == 4 and got["temperature"] == 0.7
    assert row["tasks"] == 24 and row["base"] == 0.25 and row["final"] == pytest.approx(0.625)
    assert row["diff"] == pytest.approx(0.375) and 0 < row["diff_low"] <= row["diff"] <= row["diff_high"]
    assert row["better"] == 12 and row["worse"] == 0 and row["p_permutation"] < 0.001
    assert row["levels"]["L3"]["diff"] == pytest.approx(0.75) and row["levels"]["L1"]["p_permutation"] == 1.0


def test_vs_base_levels_come_from_the_recorded_levels() -> None:
    keys = [f"synth-heldout/{i:016x}" for i in range(6)]
    levels = {k: 1 + i // 3 for i, k in enumerate(keys)}
    base = _eval({k: 0.0 for k in keys}).model_copy(update={"levels": levels})
    final = _eval({k: (0.5 if levels[k] == 2 else 0.0) for k in keys}).model_copy(update={"levels": levels})
    row = vs_base(base, final)["synth-heldout"]
    assert row["levels"]["L1"]["diff"] == 0.0 and row["levels"]["L2"]["diff"] == 0.5


def test_vs_base_permutation_weighs_size_where_the_sign_test_cannot() -> None:
    names = [f"shell-core/t{i}" for i in range(10)]
    base = {n: 0.0 for n in names} | {names[9]: 0.25}
    final = {n: 1.0 for n in names[:5]} | {n: 0.0 for n in names[5:]}  # five rose by 4 of 4, one fell by 1 of 4
    row = vs_base(_eval(base), _eval(final))["shell-core"]
    assert row["better"] == 5 and row["worse"] == 1
    assert row["p_permutation"] < row["p_sign"]
    # pass@k as a count: the base solved one task in some sample, the final five (the base's one lost)
    assert row["base_solved"] == 1 and row["final_solved"] == 5


def test_vs_base_counts_tasks_solved_in_any_sample_per_level() -> None:
    names = [f"synth-heldout/files-L{lv}-{i}" for lv in (1, 2) for i in range(4)]
    base = {n: (0.25 if n.endswith(("-0", "-1")) else 0.0) for n in names}  # two tasks a level, once in 4
    final = {n: (0.75 if "-L2-" in n else 0.0) for n in names}              # every L2 task, none at L1
    row = vs_base(_eval(base), _eval(final))["synth-heldout"]
    assert (row["base_solved"], row["final_solved"]) == (4, 4)
    assert (row["levels"]["L1"]["base_solved"], row["levels"]["L1"]["final_solved"]) == (2, 0)
    assert (row["levels"]["L2"]["base_solved"], row["levels"]["L2"]["final_solved"]) == (2, 4)


def test_vs_base_refuses_evaluations_sampled_differently() -> None:
    with pytest.raises(ClawloopError, match="differ in k"):
        vs_base(_eval({"s/a": 0.5}, k=4), _eval({"s/a": 0.5}, k=8))
    with pytest.raises(ClawloopError, match="differ in temperature"):
        vs_base(_eval({"s/a": 0.5}), _eval({"s/a": 0.5}, temperature=1.0))


def test_read_sampled_names_the_file_and_field(tmp_path) -> None:
    path = tmp_path / "outcomes.json"
    write_metrics(path, _eval({"s/a": 0.5}))
    assert read_sampled(path).outcomes == {"s/a": 0.5}
    path.write_text(path.read_text().replace("0.5", "1.5"))
    with pytest.raises(ClawloopError, match=r"outcomes\.json: outcomes\.s/a"):
        read_sampled(path)


def test_sampled_suites_must_be_eval_suites() -> None:
    ok = EvalParams.model_validate({"sampled": {"suites": ["shell-core"]}})
    assert ok.sampled.k == 4 and ok.sampled.suites == ["shell-core"]
    assert EvalParams().sampled.suites == ["shell-core"]  # params.yaml's (measured) default
    mini = [{"name": "mini", "path": "x"}]
    assert EvalParams.model_validate({"suites": mini}).sampled.suites == []  # the default only where shell-core is
    with pytest.raises(ValueError, match=r"sampled\.suites: synth-heldout not among eval\.suites"):
        EvalParams.model_validate({"suites": mini, "sampled": {"suites": ["synth-heldout"]}})
