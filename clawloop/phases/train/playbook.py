"""Build the next playbook from the capability report and the agent's own successful rollouts.

    pb = build_playbook(report, iteration=2, previous=policy_playbook(policy_dir),
                        rollouts=[probe_dir, pool_dir], count=token_counter(policy_dir))

Growth and pruning, each iteration:
1. every entry of the previous playbook is judged on the new report: a skill entry stays only if
   its skill's pass rate rose since it was last judged, a failure-mode tip only if that mode's
   share of episodes fell; the rest are pruned, and their ids retired for good;
2. new candidates: a tip (playbook_tips.yaml, the first variant not retired) for each failure
   mode the report saw, most frequent first, and for each skill below `weak_below`, weakest first;
   worked examples from the agent's own passed episodes (held-in rollouts: the probe's and the
   pool evaluation's, never a held-out suite), one per skill, weakest skill first, shortest first;
3. kept entries first, then the candidates, are added while the rendered block (the exact text
   the harness puts in the system prompt) fits `token_budget` tokens of the policy's tokenizer.

The report is the previous iteration's, whether the gate promoted its checkpoint or not (as the
curriculum reads it); the previous playbook is the one the current policy carries.

With `reflector: model` (clawloop.phases.train.reflect) the new tips are the policy's own proposals
on its held-in episodes (add / revise / remove deltas, checked by clawloop.phases.train.guards); the
tip lines of step 2 are the fallback when it proposes nothing valid, and `reflector: rules` the
ablation. Then (clawloop.phases.train.harness_search) harness edits proposed from the report are tried
on a held-in development split and kept only after a paired win there; the playbook carries
the result (`Playbook.harness`).

Teacher-free: nothing here asks another model; the text is the report's, the project's tip lines,
the agent's own commands and the policy's own reflection.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawloop.artifacts.diagnosis import CapabilityReport, load_diagnosis
from clawloop.config.train import PlaybookParams
from clawloop.core.agent.harness import HarnessConfig, playbook_block, with_edits
from clawloop.core.agent.playbook import (
    POLICY_FILE,
    HarnessEdits,
    Playbook,
    PlaybookEntry,
    PrunedEntry,
    WorkedExample,
    policy_playbook,
    write_playbook,
)
from clawloop.core.io import write_json, write_text
from clawloop.core.paired import Outcomes, outcomes_of
from clawloop.errors import ClawloopError
from clawloop.phases.train import harness_search as hs
from clawloop.phases.train import reflect as rf
from clawloop.phases.train.guards import BudgetLimits
from clawloop.phases.train.tips import TIPS, load_tips, mode_shares, skill_rates
from clawloop.phases.train.worked_examples import entry_id, example_key, load_examples

__all__ = ["TIPS", "load_tips", "mode_shares", "skill_rates"]  # the rule tips, read here and by the reflector

if TYPE_CHECKING:
    from clawloop.core.rollout_settings import RolloutSettings
    from clawloop.core.tasks.task import Task
    from clawloop.phases.train.harness_search import HarnessSearch
    from clawloop.phases.train.reflect import Generate, Reflection

TokenCounter = Callable[[str], int]


def token_counter(policy_dir: str | Path | None) -> tuple[TokenCounter, str]:
    """(count, name): the policy's own tokenizer when its directory has one, else an estimate of
    4 characters a token (an API model without local files)."""
    if policy_dir is not None and (Path(policy_dir) / "tokenizer_config.json").is_file():
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(policy_dir))
        return (lambda text: len(tok(text, add_special_tokens=False)["input_ids"])), str(policy_dir)
    return (lambda text: (len(text) + 3) // 4), "chars/4"


def judge(entry: PlaybookEntry, rates: dict[str, tuple[int, int]], modes: dict[str, float],
          ) -> tuple[bool, float, str] | None:
    """(improved, new baseline, evidence) of a previous entry on the new report; None when the
    report has nothing to say about it (no episode of its skill): it is kept as it was."""
    if entry.failure_mode is not None and entry.skill is None:
        share = modes.get(entry.failure_mode, 0.0)
        word = "fell" if share < entry.baseline else ("stayed" if share == entry.baseline else "rose")
        return share < entry.baseline, share, (f"{entry.failure_mode} share {entry.baseline:.3f} -> "
                                               f"{share:.3f} ({word})")
    if entry.skill not in rates or rates[entry.skill][1] == 0:
        return None
    p, n = rates[entry.skill]
    rate = p / n
    word = "rose" if rate > entry.baseline else ("stayed" if rate == entry.baseline else "fell")
    return rate > entry.baseline, rate, f"{entry.skill} pass rate {entry.baseline:.3f} -> {rate:.3f} ({word}, {p}/{n})"


def _candidates(report: CapabilityReport, rates: dict[str, tuple[int, int]], modes: dict[str, float],
                examples: dict[str, list[WorkedExample]], taken: set[str], iteration: int,
                params: PlaybookParams) -> list[PlaybookEntry]:
    tips = load_tips()
    out: list[PlaybookEntry] = []
    # the most frequent modes first (build_playbook keeps max_mode_tips of them), then the weakest skills
    for m in sorted((m for m in report.failure_modes if m.count and m.mode in tips["failure_modes"]),
                    key=lambda m: (-m.count, m.mode)):
        for text in tips["failure_modes"][m.mode]:
            eid = entry_id("tip", "mode", m.mode, text)
            if eid not in taken:
                out.append(PlaybookEntry(id=eid, kind="tip", failure_mode=m.mode, text=text,
                                         added_iteration=iteration, baseline=modes.get(m.mode, 0.0),
                                         evidence=f"{m.mode}: {m.count} of {report.episodes} episodes"))
                break
    weak = sorted(((p / n, -n, s) for s, (p, n) in rates.items() if n and p / n < params.weak_below))
    for rate, neg_n, skill in weak:
        for text in tips["skills"].get(skill, []):
            eid = entry_id("tip", "skill", skill, text)
            if eid not in taken:
                out.append(PlaybookEntry(id=eid, kind="tip", skill=skill, text=text, added_iteration=iteration,
                                         baseline=rate, evidence=f"{skill}: {rates[skill][0]}/{-neg_n} passed"))
                break
    order = sorted(examples, key=lambda s: (rates[s][0] / rates[s][1] if rates.get(s, (0, 0))[1] else 1.0, s))
    for skill in order:
        n = 0
        for ex in examples[skill]:
            eid = example_key(ex)
            if eid in taken or n >= params.examples_per_skill:
                continue
            p, total = rates.get(skill, (0, 0))
            out.append(PlaybookEntry(id=eid, kind="example", skill=skill, example=ex, added_iteration=iteration,
                                     baseline=p / total if total else 0.0,
                                     evidence=f"own episode {ex.episode_id}; {skill}: {p}/{total} passed"))
            n += 1
    return out


def build_playbook(report: CapabilityReport, *, iteration: int, previous: Playbook | None,
                   rollouts: Sequence[str | Path], count: TokenCounter, params: PlaybookParams | None = None,
                   harness_config: HarnessConfig | None = None, tokenizer: str = "",
                   report_path: str = "", reflection: Reflection | None = None) -> Playbook:
    """The playbook of `iteration` (see the module docstring). With a `reflection` that holds valid
    tip edits, its removals and revisions apply to the entries the report kept and its new tips
    replace the rule tips (the worked examples come from the agent's episodes either way); the
    harness edits of `previous` are carried over (the search may change them afterwards)."""
    params = params or PlaybookParams()
    harness_config = harness_config or HarnessConfig()
    rates, modes = skill_rates(report), mode_shares(report)
    retired = list(previous.retired) if previous else []
    kept: list[PlaybookEntry] = []
    pruned: list[PrunedEntry] = []
    reflected = reflection is not None and not reflection.fallback
    revived: list[PlaybookEntry] = []  # a rewording of an entry the report pruned: a fresh candidate

    def retire(e: PlaybookEntry, reason: str) -> None:
        pruned.append(PrunedEntry(id=e.id, kind=e.kind, skill=e.skill, failure_mode=e.failure_mode, reason=reason))
        retired.append(e.id)

    for e in previous.entries if previous else []:
        verdict = judge(e, rates, modes)
        if verdict is None:
            judged = e
        elif verdict[0] or not params.prune:
            judged = e.model_copy(update={"baseline": verdict[1], "evidence": verdict[2]})
        else:
            retire(e, verdict[2])
            if reflected and e.id in reflection.revisions:  # type: ignore[union-attr]
                revived.append(reflection.revisions[e.id].model_copy(update={"baseline": (verdict[1])}))  # type: ignore[union-attr]
            continue
        if reflected and e.id in reflection.removals:  # type: ignore[union-attr]
            retire(e, f"removed by the reflector: {reflection.removals[e.id]}")  # type: ignore[union-attr]
        elif reflected and e.id in reflection.revisions:  # type: ignore[union-attr]
            retire(e, "revised by the reflector")
            kept.append(reflection.revisions[e.id].model_copy(update={"baseline": judged.baseline}))  # type: ignore[union-attr]
        else:
            kept.append(judged)
    taken = set(retired) | {e.id for e in kept}
    # A kept entry already answers its key: no second rule tip for the same skill or failure mode.
    answered = {(e.skill, e.failure_mode) for e in kept if e.kind == "tip"}
    candidates = _candidates(report, rates, modes, load_examples(rollouts, params), taken, iteration, params)
    if reflected:
        tips = [t for t in [*revived, *reflection.adds] if t.id not in taken]  # type: ignore[union-attr]
        fresh = [*tips, *(c for c in candidates if c.kind == "example")]
    else:
        fresh = [c for c in candidates if not (c.kind == "tip" and (c.skill, c.failure_mode) in answered)]

    def render(entries: list[PlaybookEntry]) -> str:
        return playbook_block(Playbook(token_budget=params.token_budget, entries=entries), harness_config)

    chosen: list[PlaybookEntry] = []
    used = 0
    limits = {"tip": params.max_tips, "example": params.max_examples}
    for e in [*kept, *fresh]:
        if sum(x.kind == e.kind for x in chosen) >= limits[e.kind]:
            continue
        if e.skill is None and sum(x.skill is None for x in chosen) >= params.max_mode_tips:
            continue
        trial = _ordered([*chosen, e])
        tokens = count(render(trial))
        if tokens <= params.token_budget:
            chosen.append(e.model_copy(update={"tokens": tokens - used}))
            used = tokens
    chosen = _ordered(chosen)
    return Playbook(iteration=iteration, token_budget=params.token_budget,
                    tokens=count(render(chosen)) if chosen else 0, tokenizer=tokenizer, report=report_path,
                    entries=chosen, pruned=pruned, retired=retired,
                    harness=previous.harness if previous else HarnessEdits())


def _ordered(entries: list[PlaybookEntry]) -> list[PlaybookEntry]:
    """Rendering order: failure-mode tips, skill tips, worked examples (stable within each)."""
    rank = {"mode": 0, "skill": 1, "example": 2}
    return sorted(entries, key=lambda e: rank["example" if e.kind == "example" else
                                              ("mode" if e.skill is None else "skill")])


def summary(playbook: Playbook, previous: Playbook | None) -> dict[str, Any]:
    """Flat figures for train.json (`dvc metrics show`)."""
    before = {e.id for e in previous.entries} if previous else set()
    return {"playbook_entries": len(playbook.entries), "playbook_tips": len(playbook.tips),
            "playbook_examples": len(playbook.examples), "playbook_tokens": playbook.tokens,
            "playbook_added": sum(e.id not in before for e in playbook.entries),
            "playbook_pruned": len(playbook.pruned)}


def write_artifact(out: str | Path, playbook: Playbook, harness_config: HarnessConfig | None = None, *,
                   previous: Playbook | None = None, reflection: Reflection | None = None,
                   search: HarnessSearch | None = None) -> None:
    """runs/iter-N/playbook/: playbook.json, playbook.md (the rendered block, then why each entry is
    there and why each pruned one went, the reflector's edits and what the harness learned, as a
    diff against the previous playbook's), reflection.json and harness.json when they ran."""
    out = Path(out)
    write_playbook(out / POLICY_FILE, playbook)
    block = playbook_block(playbook, harness_config) or "(empty)"
    lines = [f"# Playbook, iteration {playbook.iteration}", "",
             f"{playbook.tokens} of {playbook.token_budget} tokens ({playbook.tokenizer or 'not counted'}); "
             f"report: {playbook.report or '-'}", "", "```", block, "```", "", "## Entries", ""]
    lines += [f"- {e.kind} {e.skill or e.failure_mode} (iteration {e.added_iteration}, {e.tokens} tokens): "
              f"{e.evidence}" for e in playbook.entries] or ["(none)"]
    lines += ["", "## Pruned", ""]
    lines += [f"- {p.kind} {p.skill or p.failure_mode}: {p.reason}" for p in playbook.pruned] or ["(none)"]
    if reflection is not None:
        lines += ["", f"## Reflector ({reflection.reflector})", ""]
        if reflection.parse_error:
            lines.append(f"reply not read: {reflection.parse_error}")
        if reflection.fallback and reflection.reflector == "model":
            lines.append("no valid tip edit: the rule tips (playbook_tips.yaml) were used")
        lines += [f"- {r.status}: {r.edit.get('op')} {r.edit.get('skill') or r.edit.get('failure_mode') or r.edit.get('id') or r.edit.get('field') or ''}"
                  f" {str(r.edit.get('text') or r.edit.get('value') or '')[:120]!r} — {r.reason}"
                  for r in reflection.edits] or ["(no edits)"]
        write_json(out / "reflection.json", reflection.model_dump(mode="json"))
    before = previous.harness if previous else HarnessEdits()
    lines += ["", "## Harness", "", f"learned so far: {playbook.harness.describe()}",
              f"this iteration: {playbook.harness.describe(before)}"]
    lines += [f"- {line}" for line in playbook.harness.change_lines(before)]
    if search is not None:
        lines += ["", search.describe()]
        lines += [f"- {'kept' if t.kept else 'rejected'} ({t.source}): {t.change} — {t.why}; {t.verdict}"
                  for t in search.trials]
        lines += [f"- refused before trying: {r}" for r in search.refused]
        write_json(out / "harness.json", search.model_dump(mode="json"))
    write_text(out / "playbook.md", "\n".join(lines) + "\n")


RunDev = Callable[[Sequence["Task"], HarnessConfig], Outcomes]
"""Roll the policy out on development tasks under a harness; per-task verdicts (clawloop.core.paired)."""


@dataclass
class Evolution:
    """What the playbook methods' train step produced."""

    playbook: Playbook
    figures: dict[str, Any]
    previous: Playbook | None = None
    reflection: Reflection | None = None
    search: HarnessSearch | None = None

    def write_artifact(self, out: str | Path, harness_config: HarnessConfig | None = None) -> None:
        """This step's versioned artifact (`write_artifact`: the playbook, its reflection and search)."""
        write_artifact(out, self.playbook, harness_config, previous=self.previous, reflection=self.reflection,
                       search=self.search)


class OwnPolicy:
    """The new checkpoint's own policy for the playbook methods, loaded on first use (only the
    model reflector and the harness search need it): the reflector's replies and the development
    split's rollouts."""

    def __init__(self, ctx: RolloutSettings, checkpoint: Path, iteration: int, reply_tokens: int) -> None:
        self.ctx, self.checkpoint, self.iteration, self.reply_tokens = ctx, checkpoint, iteration, reply_tokens

    @functools.cached_property
    def policy(self) -> Any:
        return self.ctx.load_policy(self.checkpoint, policy_id=f"iter-{self.iteration}-train")

    def generate(self, messages: list[dict[str, Any]]) -> str:
        """The reflector's reply: greedy, at the reflection's own reply budget (a `Generate`)."""
        sampling = self.ctx.sampling.model_copy(update={"temperature": 0.0, "max_new_tokens": self.reply_tokens})
        return self.policy.generate([messages], sampling, tools=None)[0].text

    def run_dev(self, tasks: Sequence[Task], harness: HarnessConfig) -> Outcomes:
        """The held-in development split under `harness`, at the evaluation's sampling (a `RunDev`)."""
        episodes = self.ctx.rollouts(tasks, self.policy, harness=harness, suite="dev", iteration=self.iteration,
                                     progress=False)
        return outcomes_of(episodes, "dev")


@dataclass(frozen=True)
class PlaybookStep:
    """What one iteration's playbook step reads, and the checkpoint it writes into."""

    iteration: int
    policy: Path
    """The current policy: the playbook it carries, and its tokenizer (for the token budget)."""
    out: Path
    """The new checkpoint dir (its playbook.json)."""
    report: Path | None
    """The previous iteration's diagnosis.json."""
    rollouts: Sequence[Path] = ()
    """The held-in rollouts: the reflector's episodes and the worked examples."""
    pool: Sequence[Task] = ()
    """The validated pool: the harness search's development split is drawn from it."""
    limits: BudgetLimits | None = None
    """params.yaml's rollout budgets (None: the harness's own)."""


def evolve_checkpoint(method: str, step: PlaybookStep, params: PlaybookParams, harness_config: HarnessConfig, *,
                      generate: Generate | None = None, run_dev: RunDev | None = None) -> Evolution:
    """The playbook train.method `method` leaves in checkpoint `step.out`, and its train.json figures.

    `playbook` and `sft+playbook` evolve the playbook `step.policy` carries from the previous
    iteration's report and the held-in rollouts, and write it into `step.out`; a weight-only
    method leaves an empty one (and no figures), so its artifact is empty too. `generate` is the
    policy's reply (reflector: model); `run_dev` rolls the policy out on the development split
    (harness search)."""
    iteration, pool, report = step.iteration, step.pool, step.report
    playbook = Playbook(iteration=iteration, token_budget=params.token_budget)
    if "playbook" not in method:
        return Evolution(playbook, {})
    if report is None:
        raise ClawloopError(f"--diagnosis: train.method {method} needs the previous diagnosis.json")
    previous = policy_playbook(step.policy)
    count, tokenizer = token_counter(step.policy)
    rep = load_diagnosis(report)
    hp = params.harness
    limits = dataclasses.replace(
        step.limits or BudgetLimits(max_turns=harness_config.max_turns, command_timeout_s=harness_config.command_timeout_s),
        min_observation_chars=hp.min_observation_chars, max_observation_chars=hp.max_observation_chars)
    current = previous.harness if previous else HarnessEdits()
    episodes = rf.read_episodes(step.rollouts)
    reflection: Reflection
    if params.reflector == "model":
        if generate is None:
            raise ClawloopError("train.playbook.reflector model: no policy to reflect with")
        shown = {**harness_config.model_dump(include={"max_turns", "command_timeout_s", "observation_chars",
                                                      "format_hint"}),
                 **{k: v for k, v in current.model_dump().items() if v is not None}}
        reflection = rf.reflect(generate, report=rep, episodes=episodes, previous=previous, tasks=pool,
                                limits=limits, iteration=iteration, harness=shown, params=params.reflection)
    else:
        reflection = rf.Reflection(iteration=iteration, reflector="rules", fallback=True)
    playbook = build_playbook(rep, iteration=iteration, previous=previous, rollouts=step.rollouts, count=count,
                              params=params, harness_config=harness_config, tokenizer=tokenizer,
                              report_path=str(report), reflection=reflection)
    if not hp.search:
        search = hs.HarnessSearch(iteration=iteration, before=current, after=current, skipped="search off")
    elif run_dev is None or len(pool) < hp.min_dev_tasks:
        search = hs.HarnessSearch(iteration=iteration, before=current, after=current,
                                  skipped=f"{len(pool)} validated tasks, fewer than min_dev_tasks {hp.min_dev_tasks}"
                                  if run_dev is not None else "no policy to try edits with")
    else:
        split = hs.dev_split(pool, hp.dev_tasks)
        cands = hs.propose(rep, episodes, current, limits, hp, format_hint=harness_config.format_hint)
        cands += [hs.Candidate(edits=e, why=w, source="reflector")
                  for e, w in zip(reflection.harness, reflection.harness_why, strict=True)]
        base = harness_config.model_copy(update={"playbook": playbook})
        search = hs.search(cands, current, lambda edits: run_dev(split, with_edits(base, edits)), params=hp,
                           limits=limits, iteration=iteration, dev_tasks=[t.name or t.id for t in split])
    playbook = playbook.model_copy(update={"harness": search.after})
    write_playbook(step.out / POLICY_FILE, playbook)
    figures = {**summary(playbook, previous), **rf.summary(reflection),
               "harness_trials": len(search.trials), "harness_changed": int(search.after != search.before)}
    return Evolution(playbook, figures, previous, reflection, search)
