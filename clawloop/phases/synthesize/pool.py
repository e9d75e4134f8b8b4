"""The next pool: the budget split over the routines, the grounded routines first, procedural refill.

`synthesis.tasks_per_iteration` is split over the routines by their shares (largest remainder,
ties to the routine named first). The grounded routines (hindsight, proposer) run with the current
policy; what they do not make, the procedural routine makes up, so the pool keeps its size. The
capability report steers both (clawloop.phases.synthesize.steering) unless `synthesis.conditioning` is off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clawloop.artifacts.diagnosis import CapabilityReport
from clawloop.config.synthesis import GROUNDED, SynthesisParams
from clawloop.phases.synthesize.grounded.attempts import Attempts
from clawloop.phases.synthesize.grounded.routines import synthesize_grounded
from clawloop.phases.synthesize.procedural.generate import manifest, synthesize
from clawloop.phases.synthesize.steering import grounded_skip, largest_remainder, plan

if TYPE_CHECKING:
    from clawloop.core.tasks.task import Task
    from clawloop.policy.types import Policy

PolicyLoader = Callable[[str], tuple["Policy", str]]
"""routine -> (the current policy, the sandbox backend its episodes run on); called once, for the
first grounded routine that runs (a pool of procedural tasks needs no policy)."""


@dataclass(frozen=True)
class Pool:
    """The tasks of one iteration and what its manifest.json records."""

    tasks: list[Task]
    iteration: int
    seed: int
    budgets: dict[str, int]
    """Tasks asked of each routine."""
    produced: dict[str, int]
    """Tasks each routine made (procedural: its budget plus the refill)."""
    refill: int
    """Tasks the grounded routines fell short by, made up by the procedural routine."""
    routines: dict[str, dict[str, Any]]
    """Per routine: its manifest (procedural), its stats or why it was skipped (grounded)."""
    paraphrase: dict[str, Any] | None = None
    """What the policy's rewording did (clawloop.phases.synthesize.paraphrase), when it ran."""

    def manifest(self) -> dict[str, Any]:
        out = {"iteration": self.iteration, "seed": self.seed, "tasks": len(self.tasks),
               "budgets": self.budgets, "refill": self.refill, "routines": self.routines}
        return out if self.paraphrase is None else {**out, "paraphrase": self.paraphrase}

    def summary(self) -> str:
        """One line: the tasks made against each routine's budget."""
        made = ", ".join(f"{k} {self.produced.get(k, 0)} of {v}" for k, v in self.budgets.items())
        refill = f"; procedural made up {self.refill} that the grounded routines did not make" if self.refill else ""
        return f"iteration {self.iteration}: {len(self.tasks)} tasks ({made}{refill})"


def build_pool(params: SynthesisParams, iteration: int, last: CapabilityReport | None,
               report_path: str | None, load_policy: PolicyLoader) -> Pool:
    """Iteration `iteration`'s pool after the `last` capability report (read from `report_path`)."""
    seed = params.seed + iteration
    report = last if params.conditioning else None
    budgets = largest_remainder(params.tasks_per_iteration, {k: v for k, v in params.routines.items() if v > 0})
    produced: dict[str, int] = {}
    routines: dict[str, dict[str, Any]] = {}
    grounded: list[Task] = []
    policy: tuple[Policy, str] | None = None
    for routine in GROUNDED:
        if budgets.get(routine, 0) <= 0:
            continue
        if (skipped := grounded_skip(routine, last)) is not None:
            produced[routine], routines[routine] = 0, {"skipped": skipped}
            continue
        policy = policy or load_policy(routine)
        attempts = Attempts(n=budgets[routine], seed=seed, report=report, iteration=iteration, backend=policy[1],
                            progress=True)
        made, stats = synthesize_grounded(routine, policy[0], attempts, getattr(params, routine))
        grounded += made
        produced[routine], routines[routine] = len(made), stats

    refill = sum(budgets[r] - produced[r] for r in produced)
    the_plan = plan(report, budgets.get("procedural", 0) + refill, params.steering(), params.skills)
    made = synthesize(the_plan, seed, iteration, progress=True, forms=params.forms())
    produced["procedural"] = len(made)
    routines["procedural"] = {**manifest(the_plan, made, seed=seed, iteration=iteration,
                                         report=report_path if report else None), "refill": refill}
    return Pool(tasks=made + grounded, iteration=iteration, seed=seed, budgets=budgets, produced=produced,
                refill=refill, routines=routines)
