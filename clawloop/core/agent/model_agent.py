"""The model agent of `clawloop eval --agent model`: a policy's rollouts over suite items, as the
EpisodeRecords (clawloop.core.trajectory), the record of every agent (oracle and no-op included).

Apart from the rollout loop because it is an adapter between the eval's options (a model spec,
samples, a playbook file) and `run_rollouts`; the loop itself knows nothing of suites' items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from clawloop.config.params import RolloutParams
from clawloop.core.agent.harness import HarnessConfig
from clawloop.core.agent.playbook import Playbook, policy_playbook, read_playbook
from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
from clawloop.core.progress import Progress
from clawloop.core.tasks.suite import SuiteItem
from clawloop.core.trajectory import EpisodeRecord
from clawloop.errors import ClawloopError
from clawloop.policy.load import PolicySpec, load_policy, parse_spec
from clawloop.policy.types import Policy, SamplingParams
from sandbox.base import SandboxConfig

ROLLOUT = RolloutParams()
"""The schema's rollout defaults (params.yaml's): the fallbacks of options not given."""


def run_model_agent(items: Sequence[SuiteItem], options: dict[str, Any], *, backend: str = "bwrap",
                    sandbox_config: SandboxConfig | None = None,
                    progress: Progress | None = None) -> list[EpisodeRecord]:
    """`clawloop eval --agent model`: rollouts of a policy over suite items, as EpisodeRecords.

    options: model (policy spec string or PolicySpec, required), samples (k, default 1), batch (default: the schema's rollout.batch),
    temperature (default 0), max_new_tokens (default: the schema's rollout.max_new_tokens), seed, harness (a HarnessConfig to start from:
    the loop's, from params.yaml; default the library's), max_turns (overrides the harness's), out_dir
    (trajectory directory), playbook (a playbook.json; default: the one a model directory carries,
    clawloop.core.agent.playbook).
    `progress` (the eval's) is advanced per episode and by the tokens generated.
    """
    policy = agent_policy(options)
    sampling = SamplingParams(temperature=float(options.get("temperature") or 0.0),
                              max_new_tokens=int(options.get("max_new_tokens") or ROLLOUT.max_new_tokens),
                              seed=options.get("seed"))
    config = RolloutConfig(k=int(options.get("samples") or 1), batch_size=int(options.get("batch") or ROLLOUT.batch),
                           backend=backend, harness=_harness(options),
                           sampling=sampling, sandbox_config=sandbox_config)
    groups: dict[str, list[SuiteItem]] = {}
    for it in items:
        groups.setdefault(it.suite, []).append(it)
    records = []
    for suite, group in groups.items():
        by_id = {it.task.id: it for it in group if it.task is not None}
        res = run_rollouts([it.task for it in group if it.task is not None], policy, replace(config, suite=suite),
                           out_dir=options.get("out_dir"), progress=progress if progress is not None else False)
        for r in res:  # the rollout's record, under the item's name in the suite
            r.name = by_id[r.task_id].name
        records += res
    return records


def _harness(options: dict[str, Any]) -> HarnessConfig:
    base: HarnessConfig = options.get("harness") or HarnessConfig()
    turns = {"max_turns": options["max_turns"]} if options.get("max_turns") else {}
    return base.model_copy(update={"playbook": _playbook(options), **turns})


def _playbook(options: dict[str, Any]) -> Playbook | None:
    if options.get("playbook"):
        return read_playbook(options["playbook"])
    model = options.get("model")
    if isinstance(model, str | Path | PolicySpec):
        spec = model if isinstance(model, PolicySpec) else parse_spec(str(model))
        return policy_playbook(spec.model) if spec.backend != "openai" and Path(spec.model).is_dir() else None
    return None


def agent_policy(options: dict[str, Any]) -> Policy:
    """The policy of `--agent model`: options["model"] is a spec to load, or a loaded policy
    (evaluate loads it before its clock starts, so wall_s times episodes, not the loading)."""
    model = options.get("model")
    if not model:
        raise ClawloopError("--agent model needs --model (DIR, vllm:DIR or openai:MODEL@URL)")
    if isinstance(model, str | Path | PolicySpec):
        return load_policy(model)
    return model
