"""The harness as a learnable artifact: edits proposed from the diagnosis, kept only after a paired
win on a held-in development split.

    split = dev_split(pool, params.dev_tasks)
    cands = propose(report, episodes, current, limits, params) + reflector's harness edits
    result = search(cands, current, evaluate, params)     # evaluate(edits) -> Outcomes on `split`

What can change (clawloop.core.agent.playbook.HarnessEdits): the format-hint variant, the observation
length, the turn and command-time budgets (downward only, see clawloop.phases.train.guards), the tool
descriptions, the system-template variant. The rule-based proposer reads the report and the
trajectories: many format errors → the next format-hint variant and the explicit tool
descriptions; many cut observations → twice the observation length (up to
`max_observation_chars`); wrong results and premature submits → the `steps` system variant;
ignored errors and premature submits → the submit check; loops (repeated_action) → a repeating
reply drawn again at the probe's temperature; many
max_turns / timeout endings while a budget sits below params.yaml's limit → back up to that limit
(never past it).

Selection: the current harness and each candidate (at most `max_candidates`, one change each) are
rolled out on the same development split: a fixed subset of the iteration's validated pool
(`dev_split`, by task-id hash; held-in, never a held-out suite, which only the gate reads). A
candidate is kept only when, paired on the same tasks (clawloop.core.paired.compare), it gains at least
`min_net_gain` more tasks than it loses and the exact one-sided sign test that it is better has
p <= `alpha`; of those, the one with the largest net gain (then the smallest p, then the first
proposed). Ties keep the current harness. One change per iteration, so every change is its own
measured step, shown in playbook.md and harness.json.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from clawloop.artifacts.diagnosis import CapabilityReport
from clawloop.config.train import HarnessSearchParams
from clawloop.core.agent.playbook import FORMAT_HINTS, HarnessEdits
from clawloop.core.paired import Outcomes, compare, sign_test_p
from clawloop.phases.train.guards import BudgetLimits, check_edits

Evaluate = Callable[[HarnessEdits], Outcomes]
"""Roll the policy out on the development split under these harness edits; per-task verdicts."""
CUT_MARK = "characters cut ...]"
"""What sandbox.base.truncate_output leaves in an observation it cut."""
REDRAW_TEMPERATURE = 0.7
"""The repeat_resample a loop proposes: the probe's sampling temperature."""
DEFAULT_OBSERVATION_CHARS = 2000
"""HarnessConfig.observation_chars's default (the length an edit doubles when none was learned)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Candidate(_Model):
    """One harness edit to try: the whole edits (current + one change) and why."""

    edits: HarnessEdits
    why: str
    source: Literal["rules", "reflector"] = "rules"


class Trial(_Model):
    """A candidate tried on the development split against the current harness."""

    edits: HarnessEdits
    change: str
    """The change against the current harness, in words (HarnessEdits.describe)."""
    why: str
    source: Literal["rules", "reflector"] = "rules"
    comparison: dict[str, Any] = Field(default_factory=dict)
    """clawloop.core.paired.Comparison of the candidate (after) against the current harness (before)."""
    net: int = 0
    p_better: float = 1.0
    kept: bool = False
    verdict: str = ""


class HarnessSearch(_Model):
    """runs/iter-N/playbook/harness.json: what the harness learned this iteration, and how."""

    iteration: int = Field(0, ge=0)
    before: HarnessEdits = Field(default_factory=HarnessEdits)
    after: HarnessEdits = Field(default_factory=HarnessEdits)
    dev_tasks: list[str] = Field(default_factory=list)
    """The development split (task names or ids): held-in validated tasks."""
    baseline: dict[str, Any] = Field(default_factory=dict)
    """pass@1 of the current harness on the split: {passed, graded}."""
    limits: dict[str, Any] = Field(default_factory=dict)
    refused: list[str] = Field(default_factory=list)
    """Candidates refused by the budget guard before they were tried (why)."""
    trials: list[Trial] = Field(default_factory=list)
    skipped: str | None = None
    """Why nothing was tried (search off, too few validated tasks, no candidate)."""

    def describe(self) -> str:
        if self.skipped:
            return f"harness unchanged ({self.skipped})"
        kept = next((t for t in self.trials if t.kept), None)
        return (f"harness: {kept.change} (kept, {kept.verdict})" if kept else
                f"harness unchanged ({len(self.trials)} tried, none beat it on {len(self.dev_tasks)} dev tasks)")


def dev_split(pool: Sequence[Any], n: int) -> list[Any]:
    """A fixed subset of the validated pool: the `n` tasks first by the sha256 of their id."""
    return sorted(pool, key=lambda t: hashlib.sha256(f"dev\x1f{t.id}".encode()).hexdigest())[:n]


def _shares(episodes: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """(share of episodes with a format error, share of commands whose observation was cut)."""
    n = max(len(episodes), 1)
    fmt = sum(bool(e.get("n_format_errors")) or e.get("termination") == "format_errors" for e in episodes) / n
    outs = [str(s.get("output") or "") for e in episodes for s in e.get("steps") or []
            if s.get("exit_code") is not None or s.get("timed_out")]
    if not outs:  # no step rows: the tool turns of the conversation
        outs = [str(m.get("content") or "") for e in episodes for m in e.get("messages") or [] if m.get("role") == "tool"]
    return fmt, (sum(CUT_MARK in o for o in outs) / len(outs) if outs else 0.0)


def propose(report: CapabilityReport, episodes: Sequence[Mapping[str, Any]], current: HarnessEdits,
            limits: BudgetLimits, params: HarnessSearchParams, *, format_hint: str = "tool_call") -> list[Candidate]:
    """Rule-based harness edits from the report and the held-in trajectories (module docstring);
    `format_hint` is the harness's own variant (rollout.format_hint), the one no edit has replaced."""
    n = max(report.episodes, 1)
    share = {m.mode: m.count / n for m in report.failure_modes}
    fmt_traj, cut = _shares(episodes)
    fmt = max(share.get("format_error", 0.0), fmt_traj)
    out: list[Candidate] = []

    def add(why: str, **change: Any) -> None:
        out.append(Candidate(edits=current.model_copy(update=change), why=why))

    if fmt >= params.format_error_share:
        order = list(FORMAT_HINTS)
        now = current.format_hint or format_hint
        nxt = order[(order.index(now) + 1) % len(order)]
        add(f"format errors in {fmt:.0%} of episodes: the {nxt} format hint", format_hint=nxt)
        if current.tool_descriptions != "explicit":
            add(f"format errors in {fmt:.0%} of episodes: explicit tool descriptions", tool_descriptions="explicit")
    obs = current.observation_chars or DEFAULT_OBSERVATION_CHARS
    if cut >= params.truncated_share and obs < limits.max_observation_chars:
        add(f"{cut:.0%} of observations cut at {obs} characters: longer observations",
            observation_chars=min(2 * obs, limits.max_observation_chars))
    sloppy = share.get("wrong_result", 0.0) + share.get("premature_submit", 0.0)
    if sloppy >= params.mode_share and current.system_template != "steps":
        add(f"wrong_result + premature_submit in {sloppy:.0%} of episodes: the steps system prompt",
            system_template="steps")
    ignored = share.get("error_ignored", 0.0) + share.get("premature_submit", 0.0)
    if ignored >= params.mode_share and not current.submit_check:
        add(f"error_ignored + premature_submit in {ignored:.0%} of episodes: a note answers the first "
            "submit after a failed command", submit_check=True)
    if share.get("repeated_action", 0.0) >= params.mode_share and current.repeat_resample is None:
        add(f"repeated_action in {share['repeated_action']:.0%} of episodes: a reply that repeats the last "
            f"command is drawn again at temperature {REDRAW_TEMPERATURE}", repeat_resample=REDRAW_TEMPERATURE)
    if (share.get("max_turns", 0.0) >= params.mode_share and current.max_turns is not None
            and limits.max_turns is not None and current.max_turns < limits.max_turns):
        add(f"max_turns ended {share['max_turns']:.0%} of episodes: the turn budget back to "
            f"rollout.max_turns", max_turns=limits.max_turns)
    if (share.get("timeout", 0.0) >= params.mode_share and current.command_timeout_s is not None
            and limits.command_timeout_s is not None and current.command_timeout_s < limits.command_timeout_s):
        add(f"timeouts in {share['timeout']:.0%} of episodes: the command timeout back to "
            f"rollout.command_timeout_s", command_timeout_s=limits.command_timeout_s)
    return out


def search(candidates: Sequence[Candidate], current: HarnessEdits, evaluate: Evaluate, *,
           params: HarnessSearchParams, limits: BudgetLimits, iteration: int = 0,
           dev_tasks: Sequence[str] = ()) -> HarnessSearch:
    """Try the candidates on the development split (`evaluate`) and keep the best that beats the
    current harness there (module docstring); every candidate is checked by the budget guard first."""
    result = HarnessSearch(iteration=iteration, before=current, after=current, dev_tasks=list(dev_tasks),
                           limits={"max_turns": limits.max_turns, "command_timeout_s": limits.command_timeout_s,
                                   "observation_chars": [limits.min_observation_chars, limits.max_observation_chars]})
    tried: list[Candidate] = []
    for c in candidates:
        why = check_edits(c.edits, limits)
        if why:
            result.refused.append(f"{c.edits.describe(current)}: {why}")
        elif c.edits != current and all(c.edits != t.edits for t in tried):
            tried.append(c)
    tried = tried[: params.max_candidates]
    if not tried:
        result.skipped = "no candidate edit"
        return result
    base = evaluate(current)
    result.baseline = {"passed": int(sum(base.values())), "graded": len(base)}
    for c in tried:
        cmp = compare(base, evaluate(c.edits))
        net = cmp.gained - cmp.lost
        p = sign_test_p(cmp.gained, cmp.lost, alternative="greater")
        ok = net >= params.min_net_gain and p <= params.alpha
        result.trials.append(Trial(edits=c.edits, change=c.edits.describe(current), why=c.why, source=c.source,
                                   comparison=cmp.to_dict(), net=net, p_better=round(p, 6), kept=False,
                                   verdict=f"{cmp.words('dev tasks')}; one-sided p = {p:.3f}"
                                           + ("" if ok else f" (needs net >= {params.min_net_gain}, "
                                                            f"p <= {params.alpha:g})")))
    winners = [(i, t) for i, t in enumerate(result.trials)
               if t.net >= params.min_net_gain and t.p_better <= params.alpha]
    if winners:
        i, best = min(winners, key=lambda it: (-it[1].net, it[1].p_better, it[0]))
        result.trials[i] = best.model_copy(update={"kept": True})
        result.after = best.edits
    return result
