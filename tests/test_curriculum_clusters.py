"""The curriculum's evidence counts a task's samples as one cluster (#76, item 4).

The probe runs k samples of each task; the Wilson interval behind raise/hold/lower treated them
as k independent trials, so 2 tasks failed 4 times each read as 0 of 8 and lowered a skill.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clawloop.config.diagnosis import DiagnosisParams
from clawloop.core.stats import effective_trials, wilson_interval
from clawloop.phases.diagnose.capability import _cell, decide_level
from clawloop.phases.diagnose.diagnose import diagnose
from clawloop.phases.diagnose.synthetic import episode_row, write_trajectories


def _moments(per_task: list[tuple[int, int]]) -> tuple[int, int, int, float, float, float]:
    """(episodes, passes, tasks, Σy², Σyn, Σn²) of (samples, passes) per task."""
    return (sum(n for n, _ in per_task), sum(y for _, y in per_task), len(per_task),
            float(sum(y * y for _, y in per_task)), float(sum(y * n for n, y in per_task)),
            float(sum(n * n for n, _ in per_task)))


def test_one_sample_a_task_is_the_plain_count_and_agreeing_samples_count_once() -> None:
    assert effective_trials(*_moments([(1, 1)] * 3 + [(1, 0)] * 7)) == pytest.approx(10)
    assert effective_trials(*_moments([(4, 4)] * 2 + [(4, 0)] * 6)) == pytest.approx(8)  # 8 tasks, not 32
    assert effective_trials(*_moments([(4, 0)] * 2)) == 2  # all failed: each task once
    assert effective_trials(*_moments([(4, 1)] * 8)) == 32  # as spread as chance: all 32 count
    mixed = effective_trials(*_moments([(4, 3)] * 2 + [(4, 0)] * 6))
    assert 8 < mixed < 32


def test_two_tasks_failed_four_times_do_not_lower_a_skill() -> None:
    params = DiagnosisParams()
    episodes, passes, tasks, yy, yn, nn = _moments([(4, 0), (4, 0)])
    independent = _cell("git", 2, episodes, passes)
    clustered = _cell("git", 2, episodes, passes, tasks, yy, yn, nn)
    assert decide_level([_cell("git", 1, 8, 6), independent], params)[0] == "lower"  # what it did
    action, level, _, why = decide_level([_cell("git", 1, 8, 6), clustered], params)
    assert (action, level) == ("hold", 1), why  # level 2 is unproven, not failing
    assert (clustered.ci_low, clustered.ci_high) == pytest.approx(wilson_interval(0, 2))


def test_the_report_counts_tasks_from_the_trajectories(tmp_path: Path) -> None:
    eps = [episode_row(f"t{t}-{s}", task_id=f"t{t}", sample=s, skill="csv", level=2,
                       outcome="passed" if t == 0 else "failed") for t in range(3) for s in range(4)]
    report = diagnose([write_trajectories(tmp_path / "probe", eps, [])], out_dir=tmp_path / "out")
    cell = report.cell("csv", 2)
    assert cell is not None and (cell.episodes, cell.passes, cell.tasks) == (12, 4, 3)
    assert cell.effective_episodes == pytest.approx(3)
    assert (cell.ci_low, cell.ci_high) == pytest.approx(wilson_interval(1, 3))
