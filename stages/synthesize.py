"""Stage `synthesize@N`: iteration N's task pool, steered by the previous capability report.

    python -m stages.synthesize --iteration 1 --report runs/iter-0/diagnosis/diagnosis.json \
        --policy runs/iter-0/policy --out runs/iter-1/pool

The budget (`synthesis.tasks_per_iteration`) is split over the routines by their shares:
procedural generators planned by the curriculum, and the agent-grounded routines (hindsight,
proposer) run with the current policy. Writes pool.jsonl and manifest.json.
"""

from pathlib import Path

from clawloop.errors import ClawloopError
from clawloop.params import Params
from clawloop.stage import output_dir, run_stage, stage_parser


def main(params: Params) -> None:
    ap = stage_parser()
    ap.add_argument("--report", type=Path, help="previous iteration's diagnosis.json")
    ap.add_argument("--policy", type=Path, help="current policy (agent-grounded routines)")
    args = ap.parse_args()

    from clawloop.diagnosis.schema import load_report
    from clawloop.io import write_json
    from clawloop.synthesis.routine_a.curriculum import CurriculumParams, largest_remainder, plan
    from clawloop.synthesis.routine_a.procedural import manifest, synthesize
    from clawloop.tasks.pool import write_pool

    syn = params.synthesis
    seed = syn.seed + args.iteration
    report = load_report(args.report) if syn.conditioning and args.report else None
    budgets = largest_remainder(syn.tasks_per_iteration, {k: v for k, v in syn.routines.items() if v > 0})

    # Routine A: the curriculum turns the report into quotas per (skill, level).
    curriculum = CurriculumParams(**{**syn.curriculum, "conditioning": syn.conditioning})
    the_plan = plan(report, budgets.get("procedural", 0), curriculum, syn.skills)
    tasks = synthesize(the_plan, seed, args.iteration, progress=True, conversational=syn.conversational)
    produced = {"procedural": len(tasks)}
    info = {"procedural": manifest(the_plan, tasks, seed=seed, iteration=args.iteration,
                                   report=str(args.report) if report else None)}

    # Routine B: tasks grounded in what the policy itself does or proposes (on rollout.backend).
    policy = None
    for routine in ("hindsight", "proposer"):
        if budgets.get(routine, 0) > 0:
            from clawloop.loop import loop_context
            from clawloop.synthesis.routine_b.run import synthesize_routine_b

            if args.policy is None:
                raise ClawloopError(f"--policy: routine {routine} needs the current policy")
            ctx = loop_context(params)
            policy = policy or ctx.load_policy(args.policy, policy_id=args.policy.name)
            made, stats = synthesize_routine_b(
                routine, policy=policy, n=budgets[routine], seed=seed, report=report,
                iteration=args.iteration, backend=ctx.backend,
                params=getattr(syn, routine), progress=True)
            tasks += made
            produced[routine] = len(made)
            info[routine] = stats

    with output_dir(args.out) as tmp:
        n = write_pool(tmp / "pool.jsonl", tasks)
        write_json(tmp / "manifest.json", {"iteration": args.iteration, "seed": seed, "tasks": n,
                                           "budgets": budgets, "routines": info})
    print(f"[synthesize] iteration {args.iteration}: {n} tasks ("
          + ", ".join(f"{k} {produced.get(k, 0)} of {v}" for k, v in budgets.items()) + ")")


if __name__ == "__main__":
    run_stage(main)
