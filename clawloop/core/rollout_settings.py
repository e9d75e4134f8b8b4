"""What every stage's episodes share, built once from params.yaml: the harness and sampling of
`rollout`, the policy spec of `rollout.backend`, the sandboxes of `sandbox` (RolloutSettings).
`clawloop eval --agent model` and `clawloop tasks probe` build theirs here too, from one Params."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from clawloop.config.params import Params
from clawloop.core.agent.harness import HarnessConfig
from clawloop.core.agent.model_agent import ModelAgent, eval_playbook
from clawloop.core.agent.playbook import policy_playbook
from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
from clawloop.core.progress import Progress
from clawloop.core.tasks.task import Task
from clawloop.core.trajectory import EpisodeRecord
from clawloop.policy.hf import HFPolicyConfig
from clawloop.policy.load import OPTION_SECTIONS, PolicySpec, load_policy, parse_spec
from clawloop.policy.types import LlamaCppPolicyConfig, Policy, SamplingParams


@dataclass(frozen=True)
class RolloutSettings:
    """The loop's rollout context (layer: core; one of five rollout types, docs/names.md): what every
    stage's episodes share, built once from params.yaml by `rollout_settings`: the harness
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
        clawloop.core.agent.playbook), if any, rendered into the system prompt."""
        return self.harness.model_copy(update={"playbook": policy_playbook(policy)})

    def sampling_at(self, temperature: float | None) -> SamplingParams:
        """The sampling with another temperature (None keeps rollout.temperature)."""
        return self.sampling if temperature is None else self.sampling.model_copy(update={"temperature": temperature})

    def load_policy(self, path: str | Path, policy_id: str) -> Policy:
        """The policy at checkpoint dir `path` on rollout.backend. On the openai backend the endpoint
        of `rollout.openai` serves the model (e.g. `clawloop serve`): the path is sent as the model
        name, and the weights are whatever the endpoint holds."""
        policy = load_policy(self.policy.model_copy(update={"model": str(path), "policy_id": policy_id}))
        fmt = getattr(policy, "number_format", None)  # HFPolicy: dtype auto follows the CPU, so say what it chose
        if fmt is not None:
            print(f"[policy] {policy_id}: {fmt}", flush=True)
        return policy

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

    def policy_spec(self, model: str | PolicySpec) -> PolicySpec:
        """The policy a command's `--model` names (DIR, vllm:DIR, openai:MODEL@URL: its backend is the
        one it names) with this context's backends' options (rollout.engine, rollout.vllm, ...)."""
        spec = model if isinstance(model, PolicySpec) else parse_spec(str(model))
        return spec.model_copy(update={s: getattr(self.policy, s) for s in OPTION_SECTIONS})

    def model_agent(self, spec: PolicySpec, *, samples: int = 1, playbook: Path | None = None) -> ModelAgent:
        """`clawloop eval --agent model`'s agent: `spec` (see `policy_spec`) rolled out `samples` times a
        task under `rollout_config`, as a stage's rollouts, with the playbook of `playbook` (a
        playbook.json), else the one a model directory carries (`harness_for` in the stages)."""
        return ModelAgent(spec, self.rollout_config(k=samples, harness=self.harness_of(spec, playbook)))

    def harness_of(self, spec: PolicySpec, playbook: Path | None = None) -> HarnessConfig:
        """`harness_for` a command's `--model`: its playbook is `playbook` (a playbook.json) when
        given, else the one its model directory carries (clawloop.core.agent.model_agent.eval_playbook)."""
        return self.harness.model_copy(update={"playbook": eval_playbook(spec, playbook)})


def rollout_settings(params: Params) -> RolloutSettings:
    """The RolloutSettings of params.yaml's `rollout` and `sandbox` sections (a stage's Params)."""
    r, sb = params.rollout, params.sandbox
    threads = r.engine.threads or max(1, (os.cpu_count() or 2) // 2)
    return RolloutSettings(
        harness=HarnessConfig.of_rollout(r),
        sampling=SamplingParams(temperature=r.temperature, max_new_tokens=r.max_new_tokens, seed=r.seed),
        policy=PolicySpec(backend=r.backend, model="", hf=HFPolicyConfig(engine=replace(r.engine, threads=threads)),
                          llamacpp=LlamaCppPolicyConfig(threads=threads, parallel=r.batch, gguf_type=r.gguf_type),
                          openai=r.openai, vllm=r.vllm),
        backend=sb.backend, jobs=sb.jobs, batch=r.batch)
