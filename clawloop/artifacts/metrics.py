"""The evaluate stage's files: an iteration's `metrics.json` (IterationMetrics), `eval/summary.json`
(EvalDetail), `heldout.json` (HeldoutRecord) and a sampled evaluation's `outcomes.json`, with their
readers. `metrics.json` is what `dvc metrics show` reads, so it holds only the headline numbers (a
table of 60+ columns answers nothing); the per-suite figures go to `eval/summary.json`, which the
report reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from clawloop.core.io import read_json, write_json
from clawloop.core.stats import pass_figures
from clawloop.errors import ClawloopError

_M = TypeVar("_M", bound=BaseModel)


class SuiteMetrics(BaseModel):
    """Evaluation figures of one suite."""

    model_config = ConfigDict(extra="forbid")

    tasks: int = Field(ge=0)
    episodes: int = Field(ge=0)
    passed: int = Field(ge=0)
    errors: int = Field(ge=0)
    skipped: int = Field(ge=0)
    pass_at_1: float = Field(ge=0, le=1)
    """Mean over tasks of the share of passing samples."""
    pass_at_k: float = Field(ge=0, le=1)
    """Share of tasks with at least one passing sample."""
    mean_reward: float = Field(ge=0, le=1)
    heldout: bool = True
    at: Literal["every", "ends"] = "every"
    """The suite's `eval.suites` `at`: an `ends` suite (iteration 0 and the final policy only) is left out of
    the held-out pass@1 and the gate, which every iteration must measure alike (`gated`)."""
    format_error_episodes: int = Field(0, ge=0)
    """Episodes ended by format errors in a row: what moves first in a from-scratch loop."""
    graded: int = Field(0, ge=0)
    """Episodes that passed or failed (errors and skips are not graded): the interval's n."""
    baselines: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Published results on the same tasks (InterCode-Bash's runs): model → {passed, tasks}."""

class IterationMetrics(BaseModel):
    """runs/iter-N/metrics.json: the headline numbers, one row of `dvc metrics show`."""

    model_config = ConfigDict(extra="forbid")

    iteration: int = Field(ge=0)
    heldout_pass_rate: float = Field(ge=0, le=1)
    """pass@1 over the held-out suites' tasks together (`heldout_rate`)."""
    heldout_ci_low: float = Field(0.0, ge=0, le=1)
    """Wilson 95% interval of the held-out pass rate (graded episodes pooled), low end."""
    heldout_ci_high: float = Field(1.0, ge=0, le=1)
    promoted: bool
    """Whether this iteration's checkpoint became the policy."""
    best_heldout_pass_rate: float = Field(ge=0, le=1)
    """Held-out pass@1 of the promoted policy after this iteration."""
    policy_from: int = Field(ge=0)
    """Iteration whose checkpoint `policy/` holds."""
    format_error_episodes: int = Field(0, ge=0)
    """Held-out episodes ended by format errors: what moves first in a from-scratch loop."""
    vs_base_gained: int = Field(0, ge=0)
    """Held-out tasks this checkpoint passes that iteration 0 failed (paired, clawloop.core.paired)."""
    vs_base_lost: int = Field(0, ge=0)
    """Held-out tasks iteration 0 passed that this checkpoint fails."""
    vs_base_p: float = Field(1.0, ge=0, le=1)
    """Exact McNemar p of the checkpoint against iteration 0 (two-sided)."""
    gate_p_worse: float = Field(1.0, ge=0, le=1)
    """The gate's test: exact one-sided p that the checkpoint is worse than the policy."""
    gate_worse_suites: list[str] = Field(default_factory=list)
    """Held-out suites on which the checkpoint alone was worse than the policy (`worse_suites`,
    gate.suite_alpha): a reason for the gate to keep the policy that the pooled p does not show."""
    vs_base_suites: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Per held-out suite, the checkpoint against iteration 0 on the same tasks: base_rate, rate,
    diff with its 95% paired-bootstrap interval (diff_low, diff_high), p (exact McNemar) and
    p_permutation (paired permutation on per-task pass rates)."""
    wall_s: float = Field(ge=0)
    """Wall time of the evaluation stage."""

class EvalDetail(BaseModel):
    """runs/iter-N/eval/summary.json: every suite's figures, for the report and `dvc plots`."""

    model_config = ConfigDict(extra="forbid")

    iteration: int = Field(ge=0)
    suites: dict[str, SuiteMetrics]
    episodes_per_s: float = Field(ge=0)
    wall_s: float = Field(ge=0)
    number_format: str | None = None
    """The dtype the replies were computed in and why, e.g. "bfloat16 (auto: native bf16, probe
    matmul bf16 3.4x float32)" (clawloop.policy.number_format; None: a backend that does not say)."""

class HeldoutRecord(BaseModel):
    """runs/iter-N/heldout.json: per-task held-out verdicts (clawloop.core.paired.Outcomes) of this
    iteration's checkpoint, of the policy in `policy/` after the gate, and of iteration 0, with
    the paired comparisons the gate and the report read. The next iteration's gate compares its
    checkpoint with `policy`; every iteration carries `base` forward, so "base vs final" needs
    no other file."""

    model_config = ConfigDict(extra="forbid")

    iteration: int = Field(ge=0)
    checkpoint: dict[str, float]
    policy: dict[str, float]
    policy_from: int = Field(ge=0)
    base: dict[str, float]
    vs_policy: dict[str, Any] | None = None
    """The checkpoint against the policy it would have replaced (the gate's comparison)."""
    vs_base: dict[str, Any] | None = None
    """The checkpoint against iteration 0."""
    levels: dict[str, int] = Field(default_factory=dict)
    """Held-out task key → its difficulty level, where the task carries one (the report's per-level
    tables; synth-heldout's task names are content ids, so the level is not in the name)."""

class SampledEval(BaseModel):
    """A sampled evaluation's outcomes.json (stages/evaluate_sampled.py)."""

    model_config = ConfigDict(extra="forbid")

    k: int = Field(ge=1)
    temperature: float = Field(ge=0)
    suites: dict[str, SuiteMetrics]
    outcomes: dict[str, Annotated[float, Field(ge=0, le=1)]]
    """`suite/task` → share of its k samples that passed."""
    levels: dict[str, int] = Field(default_factory=dict)
    """`suite/task` → the task's difficulty level, where it carries one."""

def _read_model(cls: type[_M], path: str | Path) -> _M:
    from pydantic import ValidationError

    try:
        return cls.model_validate(read_json(path))
    except ValidationError as e:
        err = e.errors()[0]
        raise ClawloopError(f"{path}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None

def read_metrics(path: str | Path) -> IterationMetrics:
    """Read and check an iteration's metrics.json."""
    return _read_model(IterationMetrics, path)

def write_metrics(path: str | Path, metrics: BaseModel) -> None:
    write_json(path, metrics.model_dump(mode="json"))

def read_eval_detail(path: str | Path) -> EvalDetail:
    """Read and check an iteration's eval/summary.json."""
    return _read_model(EvalDetail, path)

def read_heldout(path: str | Path) -> HeldoutRecord:
    """Read and check an iteration's heldout.json."""
    return _read_model(HeldoutRecord, path)

def read_sampled(path: str | Path) -> SampledEval:
    """Read and check a sampled evaluation's outcomes.json."""
    return _read_model(SampledEval, path)

def gated(suites: dict[str, SuiteMetrics]) -> dict[str, SuiteMetrics]:
    """The held-out suites every iteration rolls out (not `at: ends`): what the gate and the held-out
    pass@1 are about, so that iteration 0, 1 and the last are measured on the same suites."""
    return {name: s for name, s in suites.items() if s.heldout and s.at == "every"}

def heldout_rate(suites: dict[str, SuiteMetrics]) -> float:
    """pass@1 over the held-out suites' tasks together, each suite weighed by its graded episodes
    (0 when none): the rate the Wilson interval beside it and `clawloop compare`'s "all" are about.
    The plain mean of the suites' rates put 50 InterCode queries level with 72 shell-core tasks and
    fell outside what the interval described (0.114 against a pooled 12/122 = 0.098)."""
    held = [s for s in gated(suites).values() if s.graded]
    graded = sum(s.graded for s in held)
    return sum(s.pass_at_1 * s.graded for s in held) / graded if graded else 0.0

def suite_metrics(summaries: list[Any], *, heldout: bool) -> SuiteMetrics:
    """A suite's eval/summary.json figures: `clawloop.core.stats.pass_figures` (the summary `clawloop eval`
    reports too) with its rates as 0.0 where nothing was graded (the gate compares numbers)."""
    f = pass_figures(summaries)
    return SuiteMetrics(
        tasks=f.tasks, episodes=f.episodes, passed=f.passed, errors=f.errors, skipped=f.skipped,
        pass_at_1=f.pass_at_1 or 0.0, pass_at_k=f.pass_at_k or 0.0, mean_reward=f.mean_reward or 0.0,
        heldout=heldout, format_error_episodes=f.format_error_episodes, graded=f.graded)
