"""Loop bookkeeping between stages: the held-out gate, iteration metrics, policy hand-over, and
the context every stage runs its episodes in (`loop_context`).

An iteration's `metrics.json` is what `dvc metrics show` reads, so it holds only the headline
numbers (a table of 60+ columns answers nothing); the per-suite figures go to `eval/summary.json`
(EvalDetail), which the report reads. `policy/` is the checkpoint the next iteration starts
from: the new one when the gate promotes it, else the best so far.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from clawloop.errors import ClawloopError
from clawloop.io import hand_over, read_json, write_json  # noqa: F401  (hand_over: re-exported)
from clawloop.stats import pass_figures, wilson_interval

if TYPE_CHECKING:
    from clawloop.agent.harness import HarnessConfig
    from clawloop.policy.load import PolicySpec
    from clawloop.policy.types import SamplingParams
    from sandbox.base import SandboxConfig

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


class IterationMetrics(BaseModel):
    """runs/iter-N/metrics.json: the headline numbers, one row of `dvc metrics show`."""

    model_config = ConfigDict(extra="forbid")

    iteration: int = Field(ge=0)
    heldout_pass_rate: float = Field(ge=0, le=1)
    """Mean pass@1 over the held-out suites."""
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
             policy_from: int, wall_s: float) -> IterationMetrics:
    """The metrics.json row of an iteration from its suite figures and the gate's decision."""
    held = [s for s in suites.values() if s.heldout]
    graded = sum(s.graded for s in held)
    low, high = wilson_interval(sum(s.passed for s in held), graded)
    # Six places: the report prints three, and rounding twice turned 1/72's 0.00245 into 0.003.
    return IterationMetrics(
        iteration=iteration, heldout_pass_rate=heldout_rate(suites), heldout_ci_low=round(low, 6),
        heldout_ci_high=round(high, 6), promoted=promoted, best_heldout_pass_rate=best,
        policy_from=policy_from, format_error_episodes=sum(s.format_error_episodes for s in held),
        wall_s=wall_s)


def heldout_rate(suites: dict[str, SuiteMetrics]) -> float:
    """Mean pass@1 over the held-out suites (0 when there are none)."""
    rates = [s.pass_at_1 for s in suites.values() if s.heldout]
    return sum(rates) / len(rates) if rates else 0.0


def gate(current: float, previous: IterationMetrics | None, tolerance: float,
         enabled: bool = True) -> tuple[bool, float]:
    """Promote unless held-out pass@1 falls more than `tolerance` below the best so far.

    Returns (promoted, best rate after this iteration).
    """
    if previous is None:
        return True, current
    best = previous.best_heldout_pass_rate
    promoted = (not enabled) or current >= best - tolerance
    return promoted, (max(best, current) if promoted else best)


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


def write_metrics(path: str | Path, metrics: IterationMetrics | EvalDetail) -> None:
    write_json(path, metrics.model_dump(mode="json"))


def read_eval_detail(path: str | Path) -> EvalDetail:
    """Read and check an iteration's eval/summary.json."""
    return _read_model(EvalDetail, path)


@dataclass(frozen=True)
class LoopContext:
    """What every stage's episodes share, built once from params.yaml by `loop_context`: the harness
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
    sandbox_config: SandboxConfig | None
    """The config every episode's sandbox opens with. params.yaml has none to give: None opens each
    with `environment.default_config()` resolved where the episode runs (a Ray worker mounts its own
    task runtime, not this machine's path)."""
    batch: int
    """rollout.batch: episodes in lockstep."""

    def harness_for(self, policy: str | Path | None) -> HarnessConfig:
        """The harness of a rollout of the policy at `policy`: its playbook (`playbook.json`,
        clawloop.agent.playbook), if any, rendered into the system prompt."""
        from clawloop.agent.playbook import policy_playbook

        return self.harness.model_copy(update={"playbook": policy_playbook(policy)})

    def sampling_at(self, temperature: float | None) -> SamplingParams:
        """The sampling with another temperature (None keeps rollout.temperature)."""
        return self.sampling if temperature is None else self.sampling.model_copy(update={"temperature": temperature})

    def load_policy(self, path: str | Path, policy_id: str) -> Any:
        """The policy at checkpoint dir `path` on rollout.backend. On the openai backend the endpoint
        of `rollout.openai` serves the model (e.g. `clawloop serve`): the path is sent as the model
        name, and the weights are whatever the endpoint holds."""
        from clawloop.policy.load import load_policy

        return load_policy(self.policy.model_copy(update={"model": str(path), "policy_id": policy_id}))

    def rollouts(self, tasks: Any, policy: Any, *, k: int = 1, harness: HarnessConfig | None = None,
                 sampling: SamplingParams | None = None, **kwargs: Any) -> list[Any]:
        """`run_rollouts` of `policy` on this context's sandboxes, batch, harness and sampling
        (`harness`/`sampling` replace them; other keywords go through: out_dir, iteration, suite...)."""
        from clawloop.agent.rollout import run_rollouts

        return run_rollouts(tasks, policy, k=k, batch_size=self.batch, backend=self.backend,
                            harness_config=harness or self.harness, sampling=sampling or self.sampling,
                            sandbox_config=self.sandbox_config, **kwargs)


def loop_context(params: Any) -> LoopContext:
    """The LoopContext of params.yaml's `rollout` and `sandbox` sections (a stage's Params)."""
    from clawloop.agent.harness import HarnessConfig
    from clawloop.policy.hf import HFPolicyConfig
    from clawloop.policy.load import PolicySpec
    from clawloop.policy.types import LlamaCppPolicyConfig, SamplingParams

    r, sb = params.rollout, params.sandbox
    threads = r.threads or max(1, (os.cpu_count() or 2) // 2)
    return LoopContext(
        harness=HarnessConfig(max_turns=r.max_turns, command_timeout_s=r.command_timeout_s,
                              max_format_errors=r.max_format_errors),
        sampling=SamplingParams(temperature=r.temperature, max_new_tokens=r.max_new_tokens, seed=r.seed),
        policy=PolicySpec(backend=r.backend, model="", hf=HFPolicyConfig(threads=threads, quantize=r.quantize, engine=r.engine,
                                                                           speculate=r.speculate),
                          llamacpp=LlamaCppPolicyConfig(threads=threads, parallel=r.batch, gguf_type=r.gguf_type),
                          openai=r.openai, vllm=r.vllm),
        backend=sb.backend, jobs=sb.jobs, sandbox_config=None, batch=r.batch)


def suite_metrics(summaries: list[Any], *, heldout: bool) -> SuiteMetrics:
    """A suite's eval/summary.json figures: `clawloop.stats.pass_figures` (the summary `clawloop eval`
    reports too) with its rates as 0.0 where nothing was graded (the gate compares numbers)."""
    f = pass_figures(summaries)
    return SuiteMetrics(
        tasks=f.tasks, episodes=f.episodes, passed=f.passed, errors=f.errors, skipped=f.skipped,
        pass_at_1=f.pass_at_1 or 0.0, pass_at_k=f.pass_at_k or 0.0, mean_reward=f.mean_reward or 0.0,
        heldout=heldout, format_error_episodes=f.format_error_episodes, graded=f.graded)
