"""Stage `validate@N`: keep only sound tasks, then label them with the current policy.

    python -m stages.validate --iteration 1 --pool runs/iter-1/pool/pool.jsonl \
        --policy runs/iter-0/policy --out runs/iter-1/validated

Agent-free: the reference solution passes, a no-op fails, the verifier agrees with itself, no
near-duplicates, no overlap with the held-out suites. Agent-based: k rollouts of the current
policy label each kept task too_easy / learnable / frontier. Writes valid.jsonl, report.json,
probe.jsonl, the probe's trajectories (probe/) and the metrics file given by --metrics.
"""

from pathlib import Path

from clawloop.params import Params
from clawloop.stage import output_dir, run_stage, stage_parser


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--pool", type=Path, required=True)
    ap.add_argument("--policy", type=Path, required=True, help="the current policy, for the probe")
    ap.add_argument("--suites", type=Path, help="runs/suites.json: the held-out suites must still match it")
    ap.add_argument("--metrics", type=Path, help="default: <out>/../validation.json")
    args = ap.parse_args()
    metrics_path = args.metrics or args.out.parent / "validation.json"

    from clawloop.io import write_json
    from clawloop.loop import loop_context
    from clawloop.progress import Progress
    from clawloop.suite_manifest import heldout_tasks
    from clawloop.tasks.pool import read_pool_lenient, write_pool
    from clawloop.validation.agent_free import AgentFreeParams, validate_pool
    from clawloop.validation.probe import ProbeResult, probe_tasks, summarize, write_probe

    val, ctx = params.validation, loop_context(params)
    tasks, parse_errors = read_pool_lenient(args.pool)
    heldout = heldout_tasks(params, args.suites)
    with Progress("validate", total=len(tasks), unit="tasks") as bar:
        kept, report = validate_pool(
            tasks, ctx.backend, ctx.jobs, heldout,
            AgentFreeParams(near_duplicate_threshold=val.near_duplicate_threshold),
            config=ctx.sandbox_config, parse_errors=parse_errors, on_done=bar.advance, executor=params.executor)
    print(f"[validate] agent-free: kept {len(kept)} of {report['input']} "
          f"({report['tasks_per_s']:.1f} tasks/s); rejected {report['rejected']}")

    # Agent-based: probe a deterministic subset (ids are content hashes, so sorting is a shuffle).
    probe_set = sorted(kept, key=lambda t: t.id)[: val.probe.max_tasks]
    policy = ctx.load_policy(args.policy, policy_id=f"iter-{args.iteration - 1}")
    with output_dir(args.out) as tmp:
        results = probe_tasks(probe_set, policy, k=val.probe.k, out_dir=tmp / "probe",
                              batch_size=ctx.batch, backend=ctx.backend, harness_config=ctx.harness_for(args.policy),
                              sampling=ctx.sampling_at(val.probe.temperature), iteration=args.iteration,
                              suite="probe", progress=True, sandbox_config=ctx.sandbox_config)
        probed = {r.task_id for r in results}
        results += [ProbeResult(task_id=t.id, k=0, passes=0, errors=0, label="unprobed")
                    for t in kept if t.id not in probed]
        write_pool(tmp / "valid.jsonl", kept)
        write_json(tmp / "report.json", report)
        write_probe(tmp / "probe.jsonl", results)
        labels = summarize(results)
    write_json(metrics_path, {
        "synthesized": report["input"], "kept": len(kept),
        "yield": round(len(kept) / report["input"], 4) if report["input"] else 0.0,
        "rejected": report["rejected"], "tasks_per_s": report["tasks_per_s"],
        "probe": {"k": val.probe.k, "tasks": len(probe_set), **labels},
    })
    print(f"[validate] probe k={val.probe.k} on {len(probe_set)} tasks: {labels}")


if __name__ == "__main__":
    run_stage(main)
