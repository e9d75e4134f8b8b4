"""Loop bookkeeping between stages: the held-out gate, iteration metrics, policy hand-over, and
the context every stage runs its episodes in (`rollout_settings`).

An iteration's `metrics.json` is what `dvc metrics show` reads, so it holds only the headline
numbers (a table of 60+ columns answers nothing); the per-suite figures go to `eval/summary.json`
(EvalDetail), which the report reads. `policy/` is the checkpoint the next iteration starts
from: the new one when the gate promotes it, else the best so far.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from clawloop import paired
from clawloop.agent.harness import HarnessConfig
from clawloop.agent.playbook import policy_playbook
from clawloop.agent.rollout import RolloutConfig, run_rollouts
from clawloop.config.params import GateParams, Params
from clawloop.errors import ClawloopError
from clawloop.io import hand_over, read_json, write_json  # noqa: F401  (hand_over: re-exported)
from clawloop.paired import Comparison, Outcomes
from clawloop.policy.hf import HFPolicyConfig
from clawloop.policy.load import PolicySpec, load_policy
from clawloop.policy.types import LlamaCppPolicyConfig, Policy, SamplingParams
from clawloop.progress import Progress
from clawloop.stats import pass_figures, wilson_interval
from clawloop.tasks.task import Task
from clawloop.trajectory import EpisodeRecord

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
    """Held-out tasks this checkpoint passes that iteration 0 failed (paired, clawloop.paired)."""
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


def headline(iteration: int, suites: dict[str, SuiteMetrics], *, promoted: bool, best: float,
             policy_from: int, wall_s: float, record: HeldoutRecord | None = None,
             worse_on: list[str] | None = None) -> IterationMetrics:
    """The metrics.json row of an iteration from its suite figures, the gate's decision and its
    paired comparisons (`record`)."""
    held = [s for s in suites.values() if s.heldout]
    graded = sum(s.graded for s in held)
    low, high = wilson_interval(sum(s.passed for s in held), graded)
    vs_base = (record.vs_base if record else None) or {}
    vs_policy = (record.vs_policy if record else None) or {}
    # Six places: the report prints three, and rounding twice turned 1/72's 0.00245 into 0.003.
    return IterationMetrics(
        iteration=iteration, heldout_pass_rate=heldout_rate(suites), heldout_ci_low=round(low, 6),
        heldout_ci_high=round(high, 6), promoted=promoted, best_heldout_pass_rate=best,
        policy_from=policy_from, format_error_episodes=sum(s.format_error_episodes for s in held),
        vs_base_gained=vs_base.get("gained", 0), vs_base_lost=vs_base.get("lost", 0),
        vs_base_p=vs_base.get("p_two_sided", 1.0), gate_p_worse=vs_policy.get("p_worse", 1.0),
        gate_worse_suites=list(worse_on or []),
        vs_base_suites=_per_suite(record) if record is not None and record.iteration > 0 else {}, wall_s=wall_s)


def _per_suite(record: HeldoutRecord) -> dict[str, dict[str, float]]:
    """metrics.json's per-suite base comparison (flat numbers: `dvc metrics show` columns)."""
    out = {}
    for suite, c in paired.compare_suites(record.base, record.checkpoint).items():
        if suite != "all":
            out[suite] = {"base_rate": round(c.before_rate, 6), "rate": round(c.after_rate, 6),
                          "diff": round(c.diff, 6), "diff_low": round(c.diff_low, 6),
                          "diff_high": round(c.diff_high, 6), "p": round(c.p_two_sided, 6),
                          "p_permutation": round(c.p_permutation, 6)}
    return out


def heldout_rate(suites: dict[str, SuiteMetrics]) -> float:
    """pass@1 over the held-out suites' tasks together, each suite weighed by its graded episodes
    (0 when none): the rate the Wilson interval beside it and `clawloop compare`'s "all" are about.
    The plain mean of the suites' rates put 50 InterCode queries level with 72 shell-core tasks and
    fell outside what the interval described (0.114 against a pooled 12/122 = 0.098)."""
    held = [s for s in suites.values() if s.heldout and s.graded]
    graded = sum(s.graded for s in held)
    return sum(s.pass_at_1 * s.graded for s in held) / graded if graded else 0.0


def gate(candidate: Outcomes, policy: Outcomes | None, alpha: float, enabled: bool = True,
         suite_alpha: float | None = None) -> tuple[bool, Comparison | None, list[str]]:
    """Promote the checkpoint unless the paired comparison with the promoted `policy` on the same
    held-out tasks says it is worse: the exact one-sided sign test p <= `alpha` over all of them,
    or over one suite's alone p <= `suite_alpha` (`worse_suites`), or nothing of it was graded
    where the policy was. No policy yet (iteration 0): promoted.

    Returns (promoted, the comparison of the checkpoint against the policy, the suites found worse)."""
    if policy is None:
        return True, None, []
    cmp = paired.compare(policy, candidate)
    worse_on = worse_suites(candidate, policy, suite_alpha)
    worse = cmp.p_worse <= alpha or (cmp.paired == 0 and bool(policy)) or bool(worse_on)
    return (not enabled) or not worse, cmp, worse_on


def worse_suites(candidate: Outcomes, policy: Outcomes, suite_alpha: float | None) -> list[str]:
    """The held-out suites on which the checkpoint alone is worse than the policy: one-sided sign
    test p <= `suite_alpha` (None: none). The pooled test let iteration 2 of the timed default
    through with InterCode 3 -> 0 of 50 behind synth-heldout's noise (12 gained, 16 lost of 234,
    p = 0.57)."""
    if suite_alpha is None:
        return []
    return [s for s, c in paired.compare_suites(policy, candidate).items()
            if s != "all" and c.lost > c.gained and c.p_worse <= suite_alpha]


class HeldoutRecord(BaseModel):
    """runs/iter-N/heldout.json: per-task held-out verdicts (clawloop.paired.Outcomes) of this
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


def heldout_record(iteration: int, checkpoint: Outcomes, previous: HeldoutRecord | None, *,
                   promoted: bool, vs_policy: Comparison | None, levels: dict[str, int] | None = None) -> HeldoutRecord:
    """This iteration's heldout.json from its checkpoint's verdicts and the gate's decision."""
    if previous is None:
        return HeldoutRecord(iteration=iteration, checkpoint=checkpoint, policy=checkpoint,
                             policy_from=iteration, base=checkpoint, levels=levels or {})
    return HeldoutRecord(
        iteration=iteration, checkpoint=checkpoint, base=previous.base,
        policy=checkpoint if promoted else previous.policy,
        policy_from=iteration if promoted else previous.policy_from,
        vs_policy=vs_policy.to_dict() if vs_policy else None,
        vs_base=paired.compare(previous.base, checkpoint).to_dict(), levels=previous.levels | (levels or {}))


def read_heldout(path: str | Path) -> HeldoutRecord:
    """Read and check an iteration's heldout.json."""
    return _read_model(HeldoutRecord, path)


def gate_and_promote(iteration: int, figures: dict[str, SuiteMetrics], verdicts: Outcomes, *, checkpoint: Path,
           previous: Path | None, it_dir: Path, gate_params: GateParams, wall_s: float,
           levels: dict[str, int] | None = None) -> IterationMetrics:
    """After an evaluation: gate the checkpoint against the policy of iteration dir `previous`,
    hand the winner over to `it_dir/policy`, write heldout.json and metrics.json. `gate_params`:
    params.yaml's gate section (alpha, enabled); `levels`: the held-out tasks' levels (heldout.json)."""
    rate = heldout_rate(figures)
    prev = read_metrics(previous / "metrics.json") if previous else None
    before = read_heldout(previous / "heldout.json") if previous else None
    promoted, vs_policy, blocked = gate(verdicts, before.policy if before else None, gate_params.alpha,
                                        gate_params.enabled, gate_params.suite_alpha)
    record = heldout_record(iteration, verdicts, before, promoted=promoted, vs_policy=vs_policy, levels=levels)
    if previous is not None:
        hand_over(checkpoint if promoted else previous / "policy", it_dir / "policy")
    best = rate if promoted or prev is None else prev.best_heldout_pass_rate
    write_metrics(it_dir / "heldout.json", record)
    row = headline(iteration, figures, promoted=promoted, best=best, policy_from=record.policy_from,
                   wall_s=wall_s, record=record, worse_on=blocked)
    write_metrics(it_dir / "metrics.json", row)
    vs = f" vs the policy {vs_policy.words()}," if vs_policy else ""
    verdict = "promoted" if promoted else "not promoted (the policy stays)"
    if blocked:
        verdict += f"; worse on {', '.join(blocked)} alone (p <= {gate_params.suite_alpha:g})"
    print(f"[evaluate] iteration {iteration}: held-out pass@1 {rate:.3f},{vs} {verdict}")
    return row


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


def read_sampled(path: str | Path) -> SampledEval:
    """Read and check a sampled evaluation's outcomes.json."""
    return _read_model(SampledEval, path)


@dataclass(frozen=True)
class RolloutSettings:
    """What every stage's episodes share, built once from params.yaml by `rollout_settings`: the harness
    and sampling of `rollout`, the policy spec of `rollout.backend`, the sandboxes of `sandbox`.

    Every stage takes these from here, so training renders the system prompt evaluation renders,
    every phase runs on `sandbox.backend` with `sandbox.jobs`, every policy loads on
    `rollout.backend`, and rollouts are seeded by `rollout.seed`."""

    harness: HarnessConfig
    """The plain harness (no playbook): what the weights are trained on."""
    sampling: SamplingParams
    """rollout.temperature / max_new_tokens / seed."""
    policy: PolicySpec
    """Backend and its options; `load_policy` fills in the checkpoint."""
    backend: str
    """sandbox.backend."""
    jobs: int
    """sandbox.jobs: sandboxes in parallel (validation, reference trajectories)."""
    batch: int
    """rollout.batch: episodes in lockstep."""

    def harness_for(self, policy: str | Path | None) -> HarnessConfig:
        """The harness of a rollout of the policy at `policy`: its playbook (`playbook.json`,
        clawloop.agent.playbook), if any, rendered into the system prompt."""
        return self.harness.model_copy(update={"playbook": policy_playbook(policy)})

    def sampling_at(self, temperature: float | None) -> SamplingParams:
        """The sampling with another temperature (None keeps rollout.temperature)."""
        return self.sampling if temperature is None else self.sampling.model_copy(update={"temperature": temperature})

    def load_policy(self, path: str | Path, policy_id: str) -> Policy:
        """The policy at checkpoint dir `path` on rollout.backend. On the openai backend the endpoint
        of `rollout.openai` serves the model (e.g. `clawloop serve`): the path is sent as the model
        name, and the weights are whatever the endpoint holds."""
        return load_policy(self.policy.model_copy(update={"model": str(path), "policy_id": policy_id}))

    def rollout_config(self, **changes: Any) -> RolloutConfig:
        """A RolloutConfig on this context's sandboxes, batch, harness and sampling; `changes`
        replace its fields (k, harness, sampling, iteration, suite...). Every sandbox opens with
        `environment.default_config()`, resolved where the episode runs: params.yaml has no
        sandbox config to give."""
        return replace(RolloutConfig(batch_size=self.batch, backend=self.backend, harness=self.harness,
                                     sampling=self.sampling), **changes)

    def rollouts(self, tasks: Sequence[Task], policy: Policy, *, out_dir: str | Path | None = None,
                 progress: bool | Progress = True, **changes: Any) -> list[EpisodeRecord]:
        """`run_rollouts` of `policy` under `rollout_config(**changes)`."""
        return run_rollouts(tasks, policy, self.rollout_config(**changes), out_dir=out_dir, progress=progress)


def rollout_settings(params: Params) -> RolloutSettings:
    """The RolloutSettings of params.yaml's `rollout` and `sandbox` sections (a stage's Params)."""
    r, sb = params.rollout, params.sandbox
    threads = r.engine.threads or max(1, (os.cpu_count() or 2) // 2)
    return RolloutSettings(
        harness=HarnessConfig(max_turns=r.max_turns, command_timeout_s=r.command_timeout_s,
                              max_format_errors=r.max_format_errors, format_hint=r.format_hint,
                              repeat_note=r.repeat_note, repeat_resample=r.repeat_resample,
                              submit_check=r.submit_check),
        sampling=SamplingParams(temperature=r.temperature, max_new_tokens=r.max_new_tokens, seed=r.seed),
        policy=PolicySpec(backend=r.backend, model="", hf=HFPolicyConfig(engine=replace(r.engine, threads=threads)),
                          llamacpp=LlamaCppPolicyConfig(threads=threads, parallel=r.batch, gguf_type=r.gguf_type),
                          openai=r.openai, vllm=r.vllm),
        backend=sb.backend, jobs=sb.jobs, batch=r.batch)


def suite_metrics(summaries: list[Any], *, heldout: bool) -> SuiteMetrics:
    """A suite's eval/summary.json figures: `clawloop.stats.pass_figures` (the summary `clawloop eval`
    reports too) with its rates as 0.0 where nothing was graded (the gate compares numbers)."""
    f = pass_figures(summaries)
    return SuiteMetrics(
        tasks=f.tasks, episodes=f.episodes, passed=f.passed, errors=f.errors, skipped=f.skipped,
        pass_at_1=f.pass_at_1 or 0.0, pass_at_k=f.pass_at_k or 0.0, mean_reward=f.mean_reward or 0.0,
        heldout=heldout, format_error_episodes=f.format_error_episodes, graded=f.graded)
