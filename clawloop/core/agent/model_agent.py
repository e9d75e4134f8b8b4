"""The model agent of `clawloop eval --agent model`: a policy's rollouts over suite items, as the
EpisodeRecords (clawloop.core.trajectory), the record of every agent (oracle and no-op included).

Its RolloutConfig is a stage's: `RolloutSettings.model_agent` (clawloop.core.rollout_settings) builds
it from one Params, so the eval's harness, sampling and batch are the ones the evaluate stage runs.
Apart from the rollout loop because it maps suites' items onto `run_rollouts`; the loop itself knows
nothing of suites' items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from clawloop.core.agent.playbook import Playbook, policy_playbook, read_playbook
from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
from clawloop.core.progress import Progress
from clawloop.core.tasks.suite import SuiteItem
from clawloop.core.trajectory import EpisodeRecord
from clawloop.policy.load import PolicySpec, load_policy
from clawloop.policy.types import Policy
from sandbox.base import SandboxConfig


@dataclass(frozen=True)
class ModelAgent:
    """A policy and how its episodes run (`clawloop.core.rollout_settings.RolloutSettings.model_agent`)."""

    policy: PolicySpec | Policy
    """The policy to load, or the loaded one (evaluate loads it before its clock starts, so wall_s
    times episodes, not the loading: `loaded`)."""
    config: RolloutConfig
    """k (samples per task), batch, harness (with the playbook) and sampling; the eval's sandbox
    backend and config replace this one's when it runs."""
    out_dir: Path | None = None
    """Where the trajectories go (Parquet parts); None: not kept."""

    def loaded(self) -> ModelAgent:
        """This agent with its policy loaded."""
        return replace(self, policy=load_policy(self.policy)) if isinstance(self.policy, PolicySpec) else self


def run_model_agent(items: Sequence[SuiteItem], agent: ModelAgent, *, backend: str = "bwrap",
                    sandbox_config: SandboxConfig | None = None,
                    progress: Progress | None = None) -> list[EpisodeRecord]:
    """`clawloop eval --agent model`: rollouts of `agent` over suite items (one rollout per suite),
    each record under its item's name. `progress` (the eval's) is advanced per episode and by the
    tokens generated."""
    policy = agent.loaded().policy
    assert not isinstance(policy, PolicySpec)
    config = replace(agent.config, backend=backend, sandbox_config=sandbox_config)
    groups: dict[str, list[SuiteItem]] = {}
    for it in items:
        groups.setdefault(it.suite, []).append(it)
    records = []
    for suite, group in groups.items():
        by_id = {it.task.id: it for it in group if it.task is not None}
        res = run_rollouts([it.task for it in group if it.task is not None], policy, replace(config, suite=suite),
                           out_dir=agent.out_dir, progress=progress if progress is not None else False)
        for r in res:  # the rollout's record, under the item's name in the suite
            r.name = by_id[r.task_id].name
        records += res
    return records


def eval_playbook(spec: PolicySpec, playbook: str | Path | None = None) -> Playbook | None:
    """The playbook an eval renders into the system prompt: `playbook` (a playbook.json) when given,
    else the one the model directory of `spec` carries (clawloop.core.agent.playbook), if any."""
    if playbook:
        return read_playbook(playbook)
    return policy_playbook(spec.model) if spec.backend != "openai" and Path(spec.model).is_dir() else None
