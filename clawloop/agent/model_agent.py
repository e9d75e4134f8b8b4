"""The model agent of `clawloop eval --agent model`: a policy's rollouts over suite items, as the
EpisodeRecords (clawloop.trajectory), the record of every agent (oracle and no-op included).

Apart from the rollout loop because it is an adapter between the eval's options (a model spec,
samples, a playbook file) and `run_rollouts`; the loop itself knows nothing of suites' items.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clawloop.agent.harness import HarnessConfig
from clawloop.agent.rollout import run_rollouts
from clawloop.errors import ClawloopError
from clawloop.progress import Progress


def run_model_agent(items: Sequence[Any], *, backend: str = "bwrap", config: Any = None,
                    options: dict[str, Any] | None = None, progress: Progress | None = None) -> list[Any]:
    """`clawloop eval --agent model`: rollouts of a policy over suite items, as EpisodeRecords.

    options: model (policy spec string or PolicySpec, required), samples (k, default 1), batch (default 32),
    temperature (default 0), max_new_tokens, max_turns, out_dir (trajectory directory), playbook
    (a playbook.json; default: the one a model directory carries, clawloop.agent.playbook).
    `progress` (the eval's) is advanced per episode and by the tokens generated.
    """
    from clawloop.policy.types import SamplingParams

    opts = dict(options or {})
    policy = agent_policy(opts)
    sampling = SamplingParams(temperature=float(opts.get("temperature") or 0.0),
                              max_new_tokens=int(opts.get("max_new_tokens") or 256),
                              seed=opts.get("seed"))
    harness = HarnessConfig(max_turns=opts.get("max_turns"), playbook=_playbook(opts))

    groups: dict[str, list[Any]] = {}
    for it in items:
        groups.setdefault(it.suite, []).append(it)
    records = []
    for suite, group in groups.items():
        by_id = {it.task.id: it for it in group}
        res = run_rollouts(
            [it.task for it in group], policy, k=int(opts.get("samples") or 1),
            batch_size=int(opts.get("batch") or 32), backend=backend, harness_config=harness,
            sampling=sampling, out_dir=opts.get("out_dir"), suite=suite,
            progress=progress if progress is not None else False, sandbox_config=config)
        for r in res:  # the rollout's record, under the item's name in the suite
            r.name = by_id[r.task_id].name
        records += res
    return records


def _playbook(options: dict[str, Any]) -> Any:
    from clawloop.agent.playbook import policy_playbook, read_playbook

    if options.get("playbook"):
        return read_playbook(options["playbook"])
    model = options.get("model")
    from clawloop.policy.load import PolicySpec, parse_spec

    if isinstance(model, str | Path | PolicySpec):
        spec = model if isinstance(model, PolicySpec) else parse_spec(str(model))
        return policy_playbook(spec.model) if spec.backend != "openai" and Path(spec.model).is_dir() else None
    return None


def agent_policy(options: dict[str, Any]) -> Any:
    """The policy of `--agent model`: options["model"] is a spec to load, or a loaded policy
    (evaluate loads it before its clock starts, so wall_s times episodes, not the loading)."""
    model = options.get("model")
    if not model:
        raise ClawloopError("--agent model needs --model (DIR, vllm:DIR or openai:MODEL@URL)")
    from clawloop.policy.load import PolicySpec, load_policy

    if isinstance(model, str | Path | PolicySpec):
        return load_policy(model)
    return model
