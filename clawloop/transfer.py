"""The transfer stage: does the loop's refined task set teach a fresh model more than its first?

A fresh base (`transfer.base`, else the loop's own base) is trained with SFT (`transfer.train`)
once on iteration 1's validated tasks and once on the final iteration's, and both are evaluated
on the held-out suites (not the `at: ends` ones: those are the loop's base and final only), paired
task by task. It composes three phases (bootstrap, train,
evaluate), so it stands above them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clawloop.artifacts.stage import output_dir
from clawloop.artifacts.suites import eval_suites
from clawloop.bootstrap.base import make_base
from clawloop.config.params import Params
from clawloop.core.io import write_json
from clawloop.core.rollout_settings import rollout_settings
from clawloop.core.tasks.pool import read_pool
from clawloop.phases.evaluate.heldout import heldout_verdicts, paired_rows
from clawloop.phases.train.jobs import EpisodeSetup, TrainJob, train


def transfer(params: Params, *, base: Path, first: Path, final: Path, out: Path,
             suites: Path | None = None) -> dict[str, Any]:
    """Train fresh models on `first`'s and `final`'s validated tasks into `out/models`, evaluate
    them, and write `out/transfer.json` (pass@1 pooled over the held-out tasks, and the paired rows)."""
    tr = params.transfer
    base_name = tr.base or params.model.base
    result: dict[str, Any] = {"base": base_name, "pass_at_1": {}, "tasks": {}}
    verdicts = {}
    if not tr.enabled:
        print("[transfer] disabled (transfer.enabled: false)")
    heldout = [(name, tasks) for name, tasks, held in eval_suites(params, suites, skip_ends="in the transfer stage") if held]
    ctx = rollout_settings(params)
    with output_dir(out / "models") as tmp:
        fresh = base
        if tr.enabled and tr.base is not None:
            fresh = tmp / "fresh"
            make_base(tr.base, fresh, seed=params.model.seed, bootstrap=params.model.bootstrap)
        for name, validated in (("first", first), ("final", final)) if tr.enabled else ():
            tasks = read_pool(validated / "valid.jsonl")
            train(TrainJob("sft", fresh, tasks, tmp / name), tr.train, EpisodeSetup.of_loop(ctx, params.executor))
            policy = ctx.load_policy(tmp / name, policy_id=f"transfer-{name}")
            verdicts[name], result["pass_at_1"][name] = heldout_verdicts(ctx, policy, heldout)
            result["tasks"][name] = len(tasks)
            print(f"[transfer] fresh {base_name} trained on {name} ({len(tasks)} tasks): "
                  f"held-out pass@1 {result['pass_at_1'][name]:.3f}")
    if tr.enabled:
        result["gain"] = result["pass_at_1"]["final"] - result["pass_at_1"]["first"]
        result["paired"] = paired_rows(verdicts["first"], verdicts["final"])  # before: first, after: final
    write_json(out / "transfer.json", result)
    return result
