"""Stage `validate@N`: keep only sound tasks, then label them with the current policy.

    python -m stages.validate --iteration 1 --pool runs/iter-1/pool/pool.jsonl \
        --policy runs/iter-0/policy --out runs/iter-1/validated

Agent-free: the reference solution passes, a no-op fails, the verifier agrees with itself, no
near-duplicates, no overlap with the held-out suites. Agent-based: k rollouts of the current
policy label each kept task too_easy / learnable / frontier. Writes valid.jsonl, rejections.json,
probe.jsonl, the probe's trajectories (probe/) and the metrics file given by --metrics. With
`validation.hinted.k`, the policy also tries the probe's frontier tasks with a hint from their
reference solution (hinted/): training learns from the passes with the hint cut.
"""

from pathlib import Path

from clawloop.artifacts.probe import summarize, write_probe
from clawloop.artifacts.stage import output_dir, run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.core.io import write_json
from clawloop.core.rollout_settings import rollout_settings
from clawloop.core.tasks.pool import id_sample, write_pool
from clawloop.phases.validate.probe import help_rollouts, probe_tasks
from clawloop.phases.validate.run import check_pool, unprobed, validation_summary


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--pool", type=Path, required=True)
    ap.add_argument("--policy", type=Path, required=True, help="the current policy, for the probe")
    ap.add_argument("--suites", type=Path, help="runs/suites.json: the held-out suites must still match it")
    ap.add_argument("--metrics", type=Path, help="default: <out>/../validation.json")
    args = ap.parse_args()

    probe, hinted, ctx = params.validation.probe, params.validation.hinted, rollout_settings(params)
    kept, rejections = check_pool(params, ctx, args.pool, args.suites)
    probe_set = id_sample(kept, probe.max_tasks)
    policy = ctx.load_policy(args.policy, policy_id=f"iter-{args.iteration - 1}")
    with output_dir(args.out) as tmp:
        probing = ctx.rollout_config(k=probe.k, harness=ctx.harness_for(args.policy), suite="probe",
                                     sampling=ctx.sampling_at(probe.temperature), iteration=args.iteration)
        results = probe_tasks(probe_set, policy, probing, out_dir=tmp / "probe", progress=True)
        helped = None
        if hinted.k:
            frontier = id_sample([t for t, r in zip(probe_set, results, strict=True) if r.label == "frontier"],
                                 hinted.max_tasks)
            helping = ctx.rollout_config(k=hinted.k, harness=ctx.harness_for(args.policy),
                                         sampling=ctx.sampling_at(hinted.temperature), iteration=args.iteration)
            helped = help_rollouts(frontier, policy, helping, out_dir=tmp / "hinted", progress=True)
        results += unprobed(kept, results)
        write_pool(tmp / "valid.jsonl", kept)
        write_json(tmp / "rejections.json", rejections)
        write_probe(tmp / "probe.jsonl", results)
        labels = summarize(results)
    metrics = validation_summary(rejections, kept, {"k": probe.k, "tasks": len(probe_set), **labels})
    if helped is not None:
        metrics["hinted"] = {"k": hinted.k, **helped}
    write_json(args.metrics or args.out.parent / "validation.json", metrics)
    print(f"[validate] probe k={probe.k} on {len(probe_set)} tasks: {labels}")
    if helped is not None:
        print(f"[validate] with a hint, k={hinted.k} on {helped['tasks']} frontier tasks: "
              f"{helped['passed']} of {helped['episodes']} passed ({helped['tasks_passed']} tasks)")


if __name__ == "__main__":
    run_stage(main)
