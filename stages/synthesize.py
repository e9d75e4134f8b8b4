"""Stage `synthesize@N`: iteration N's task pool, steered by the previous capability report.

    python -m stages.synthesize --iteration 1 --report runs/iter-0/diagnosis/diagnosis.json \
        --policy runs/iter-0/policy --out runs/iter-1/pool

The budget (`synthesis.tasks_per_iteration`) is split over the routines by their shares:
procedural generators planned by the curriculum, and the agent-grounded routines (hindsight,
proposer) run with the current policy. What routine B does not make, routine A makes up, so the
pool keeps its size; hindsight is skipped while the policy runs no command (the last report's
command vocabulary is empty). Writes pool.jsonl and manifest.json.
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
    last = load_report(args.report) if args.report else None
    report = last if syn.conditioning else None
    budgets = largest_remainder(syn.tasks_per_iteration, {k: v for k, v in syn.routines.items() if v > 0})
    produced: dict[str, int] = {}
    info: dict[str, dict] = {}
    tasks = []

    # Routine B first: tasks grounded in what the policy itself does or proposes (on rollout.backend).
    policy = None
    for routine in ("hindsight", "proposer"):
        if budgets.get(routine, 0) <= 0:
            continue
        if routine == "hindsight" and last is not None and last.command_vocabulary == 0:
            # Hindsight relabels the policy's own commands; a policy that ran none in its last
            # evaluation (a base that writes prose) explores for minutes and makes no task.
            produced[routine], info[routine] = 0, {"skipped": "the last evaluation ran no command"}
            continue
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
        produced[routine], info[routine] = len(made), stats

    # Routine A: the curriculum turns the report into quotas per (skill, level), and makes up
    # what routine B fell short of, so the pool keeps its budget.
    refill = sum(budgets[r] - produced[r] for r in produced)
    curriculum = CurriculumParams(**{**syn.curriculum, "conditioning": syn.conditioning})
    the_plan = plan(report, budgets.get("procedural", 0) + refill, curriculum, syn.skills)
    made = synthesize(the_plan, seed, args.iteration, progress=True, conversational=syn.conversational)
    tasks = made + tasks
    produced["procedural"] = len(made)
    info["procedural"] = {**manifest(the_plan, made, seed=seed, iteration=args.iteration,
                                     report=str(args.report) if report else None), "refill": refill}

    with output_dir(args.out) as tmp:
        n = write_pool(tmp / "pool.jsonl", tasks)
        write_json(tmp / "manifest.json", {"iteration": args.iteration, "seed": seed, "tasks": n,
                                           "budgets": budgets, "refill": refill, "routines": info})
    print(f"[synthesize] iteration {args.iteration}: {n} tasks ("
          + ", ".join(f"{k} {produced.get(k, 0)} of {v}" for k, v in budgets.items())
          + (f"; routine A made up {refill} that routine B did not make" if refill else "") + ")")


if __name__ == "__main__":
    run_stage(main)
