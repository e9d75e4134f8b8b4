"""Hindsight relabeling: the change an exploring agent made becomes a task.

1. Seeds: starting states of procedural tasks (files + setup), drawn toward the weak skills of the
   capability report (steering.plan_targets); the procedural task is the new task's parent.
2. Exploration: the policy works on each seed under the `explore.j2` prompt (no fixed goal),
   batched in lockstep by `run_rollouts`.
3. Relabel: the episode's bash commands are replayed in a fresh sandbox with a state snapshot
   of the workdir (paths, types, modes, sizes, sha256, link targets) before and after every
   command. No net change → no task. The net change (state_diff rules) becomes the verifier's
   expected state, `hindsight_text` turns it into instruction items that `relabel.j2` phrases
   (or the loop model rephrases, checked to keep every path and literal), and the commands that
   changed nothing are dropped from the reference solution.
4. Replay check: the kept commands run once more in a fresh sandbox and must reach the same
   state (else the full command list is tried; else "nondeterministic"). Seeded files that a
   second setup makes differently (a tarball with timestamps) are volatile: neither compared nor
   kept by the verifier; a change to one is "nondeterministic". Validation later repeats all
   this from scratch, so clock- or random-dependent changes are rejected either way.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from clawloop.config.knobs import NO_KNOBS
from clawloop.config.synthesis import HindsightParams
from clawloop.core.agent.harness import HarnessConfig, render
from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
from clawloop.core.tasks.environment import TaskEnvironment, TaskSetupError
from clawloop.core.tasks.task import FileSpec, Limits, Provenance, Solution, Task, Verifier
from clawloop.errors import ClawloopError
from clawloop.phases.synthesize.grounded import state_diff as sd
from clawloop.phases.synthesize.grounded.attempts import Attempts, Stats
from clawloop.phases.synthesize.grounded.hindsight_text import TextLimits, Undescribable, describe, show
from clawloop.phases.synthesize.skills import families
from clawloop.phases.synthesize.steering import plan_targets
from clawloop.policy.types import SamplingParams
from sandbox.base import SandboxError

if TYPE_CHECKING:
    from clawloop.artifacts.diagnosis import CapabilityReport
    from clawloop.policy.types import Policy
    from sandbox.base import Sandbox

GENERATOR = "hindsight@1"
_TEXT_READ_LIMIT = 1 << 16


# ---------------------------------------------------------------------------------- seeds
def seed_tasks(n: int, seed: int, report: CapabilityReport | None = None,
               params: HindsightParams | None = None, stats: Stats | None = None) -> list[Task]:
    """n procedural tasks whose starting states the policy will explore."""
    params = params or HindsightParams()
    fams = families()
    known = [s for s in (params.skills or [f for f in fams if f != "git"]) if s in fams]
    if not known:
        raise ClawloopError("hindsight: no skill family available for seeds")
    rng = random.Random(f"hindsight-seeds|{seed}")
    out: list[Task] = []
    seen: set[str] = set()
    for i, (skill, level) in enumerate(plan_targets(report, known, n, rng, params.levels)):
        for attempt in range(5):  # equal starting states would be one episode: draw another
            try:
                task = fams[skill].generate(level, random.Random(f"{seed}|{i}|{skill}|{level}|{attempt}"), NO_KNOBS)
            except Exception as e:  # a broken generator costs one attempt, not the stage
                if stats is not None:
                    stats.reject("seed_error", f"{skill}@{level}: {type(e).__name__}: {e}")
                break
            key = exploration_task(task, params).id
            if key not in seen:
                seen.add(key)
                out.append(task)
                break
        else:
            if stats is not None:
                stats.reject("duplicate_seed", f"{skill}@{level}: the generator repeats its starting state")
    return out


_EXPLORE_TEST = "#!/bin/bash\n# exploration has no goal: nothing to verify\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n"


def exploration_task(parent: Task, params: HindsightParams | None = None, focus: str | None = None) -> Task:
    """The goal-free episode on `parent`'s starting state (instruction from explore.j2)."""
    params = params or HindsightParams()
    files = []
    for path, spec in sorted(parent.files.items()):
        rel = path[len(parent.workdir) + 1:] if path.startswith(parent.workdir + "/") else path
        files.append(f"{show(rel)} ({len(spec.data())} bytes)")
    text = render("explore.j2", workdir=parent.workdir, files=files, focus=focus or parent.skill,
                  max_turns=params.max_turns)
    return Task(instruction=text, files=parent.files, setup=parent.setup, workdir=parent.workdir,
                env=parent.env, verifier=Verifier(files={"test.sh": FileSpec(content=_EXPLORE_TEST, mode=0o755)}),
                skill=parent.skill, level=parent.level, source="hindsight-explore",
                limits=Limits(max_turns=params.max_turns, command_timeout_s=params.command_timeout_s),
                provenance=Provenance(routine="hindsight-explore", parent_id=parent.id))


def episode_commands(summary: Any) -> list[str]:
    """The bash commands of an episode, in order (from its steps, else its messages)."""
    steps = getattr(summary, "steps", None)
    if steps:
        return [s.command for s in steps if getattr(s, "command", None)]
    out = []
    for m in getattr(summary, "messages", []) or []:
        for call in m.get("tool_calls") or [] if m.get("role") == "assistant" else []:
            fn = call.get("function", {})
            args = fn.get("arguments")
            if fn.get("name") == "bash" and isinstance(args, dict) and isinstance(args.get("command"), str):
                out.append(args["command"])
    return out


# -------------------------------------------------------------------------------- relabel
class Rejected(Exception):
    """No task from this episode; `reason` is the stats key."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def _run(env: TaskEnvironment, commands: list[str], timeout: float,
         texts: dict[str, bytes] | None = None) -> list[sd.Snapshot]:
    """Prepare, then snapshot before and after each command (seeded files' bytes into `texts`)."""
    env.prepare()
    sb, root = env.sandbox, env.task.workdir
    states = [_snap(sb, root)]
    if texts is not None:
        texts.update(_read(sb, root, states[0]))
    for cmd in commands:
        env.exec(cmd, timeout=timeout)
        states.append(_snap(sb, root))
    return states


def _snap(sb: Sandbox, root: str) -> sd.Snapshot:
    entries, truncated = sd.take_snapshot(sb, root)
    if truncated:
        raise Rejected("too_large", f"more than 20000 entries under {root}")
    return entries


def _read(sb: Sandbox, root: str, snap: sd.Snapshot, paths: list[str] | None = None) -> dict[str, bytes]:
    out, total = {}, 0
    for rel in paths if paths is not None else sorted(snap):
        e = snap.get(rel)
        if not e or e["t"] != "f" or e.get("size", 0) > _TEXT_READ_LIMIT or total > 16 * _TEXT_READ_LIMIT:
            continue
        try:
            out[rel] = sb.read_file(sd.absolute(root, rel))
        except Exception:
            continue
        total += len(out[rel])
    return out


def _replay(parent: Task, steps: list[str], states: list[sd.Snapshot], volatile: set[str],
            params: HindsightParams, backend: str) -> bool:
    """Run `steps` in a fresh sandbox; True when it ends where `states` ended. Paths the setup
    makes differently each time (tarballs with timestamps, ...) go into `volatile` and are not
    compared."""
    with TaskEnvironment(parent, backend) as env:
        again = _run(env, steps, params.command_timeout_s)
    first, start = states[0], again[0]
    volatile.update(p for p in set(first) | set(start) if first.get(p) != start.get(p))
    end, final = again[-1], states[-1]
    return all(end.get(p) == final.get(p) for p in (set(end) | set(final)) - volatile)


def relabel(parent: Task, commands: list[str], *, params: HindsightParams | None = None, backend: str = "bwrap",
            rng: random.Random | None = None, iteration: int | None = None, seed: int | None = None,
            policy: Policy | None = None) -> Task:
    """The task whose target is the change `commands` make to `parent`'s starting state.

    Raises Rejected (no_commands, no_change, too_many_changes, special_file, undescribable,
    nondeterministic, too_large, setup_error, sandbox_error)."""
    params = params or HindsightParams()
    rng = rng or random.Random(0)
    if not commands:
        raise Rejected("no_commands", "the episode ran no command")
    root = parent.workdir
    try:
        before_text: dict[str, bytes] = {}
        with TaskEnvironment(parent, backend) as env:
            sb = env.sandbox
            states = _run(env, commands, params.command_timeout_s, before_text)
            before, after = states[0], states[-1]
            changes = sd.diff(before, after)
            if not changes:
                raise Rejected("no_change", f"{len(commands)} commands left {root} as it was")
            ess = sd.essential(changes)
            if len(ess) > params.max_changes:
                raise Rejected("too_many_changes", f"{len(ess)} changes (max {params.max_changes})")
            if any(c.type == "o" for c in ess):
                raise Rejected("special_file", "the change made a special file (fifo, socket, device)")
            after_data = _read(sb, root, after, [c.path for c in ess if c.after and c.after["t"] == "f"])
        steps = list(commands)
        if params.minimize:
            steps = [cmd for i, cmd in enumerate(commands) if states[i] != states[i + 1]]
        volatile: set[str] = set()
        if params.check_replay and not _replay(parent, steps, states, volatile, params, backend):
            if steps == commands or not _replay(parent, commands, states, volatile, params, backend):
                raise Rejected("nondeterministic", "a replay of the commands reached another state")
            steps = list(commands)
        if any(c.path in volatile for c in changes):
            raise Rejected("nondeterministic", "the change touches a file the setup makes differently each time")
    except TaskSetupError as e:
        raise Rejected("setup_error", str(e)) from None
    except (SandboxError, OSError, ClawloopError) as e:
        raise Rejected("sandbox_error", str(e)) from None
    limits = TextLimits(max_chars=params.literal_chars, max_lines=params.literal_lines)
    try:
        origin = {c.path: commands[min(first_change(states, c.path), len(commands) - 1)] for c in ess}
        items, skill = describe(changes, before_text, after_data, commands, limits, origin)
        items.sort(key=lambda it: first_change(states, it["path"]))
    except Undescribable as e:
        raise Rejected("undescribable", str(e)) from None
    instruction = phrase(items, rng, keep=params.keep_untouched)
    if params.instruction == "model" and policy is not None:
        instruction = model_phrase(policy, instruction, items, root) or instruction
    checks = sd.expected_checks(changes, before, root, keep_untouched=params.keep_untouched, skip=volatile)
    vfiles = {name: FileSpec(content=text, mode=mode) for name, (text, mode) in sd.verifier_files(checks, root).items()}
    kinds = sorted({i.get("how") or i["kind"] for i in items})
    return Task(
        instruction=instruction, files=parent.files, setup=parent.setup, workdir=parent.workdir, env=parent.env,
        verifier=Verifier(files=vfiles), solution=Solution(steps=steps), skill=skill,
        level=max(1, min(5, len(steps))), tags=("hindsight", *(f"change:{k}" for k in kinds)), source="hindsight",
        limits=Limits(max_turns=max(8, 2 * len(steps) + 4)),
        provenance=Provenance(routine="hindsight", generator=GENERATOR, parent_id=parent.id, iteration=iteration,
                              seed=seed),
        metadata={"hindsight": {"commands": len(commands), "steps": len(steps), "changes": len(ess),
                                "parent_skill": parent.skill}})


_ITEM_KEYS = ("kind", "path", "src", "src2", "how", "n", "word", "old", "new", "text", "target", "mode",
              "rewrite", "plus_x", "dir")


def first_change(states: list[sd.Snapshot], rel: str) -> int:
    """Index of the first command that changed `rel` (or anything under it)."""
    for i in range(len(states) - 1):
        a, b = states[i], states[i + 1]
        if a.get(rel) != b.get(rel) or any(p.startswith(rel + "/") and a.get(p) != b.get(p)
                                           for p in set(a) | set(b)):
            return i
    return len(states)


def phrase(items: list[dict[str, Any]], rng: random.Random, *, keep: bool = True) -> str:
    """The instruction for `items` from relabel.j2 (paths shown as a person types them)."""
    blank = dict.fromkeys(_ITEM_KEYS)
    shown = [{**blank, **{k: show(v) if k in ("path", "src", "src2") else v for k, v in i.items()}}
             for i in items]
    return render("relabel.j2", items=shown, v=rng.randrange(6), keep=keep).strip()


def model_phrase(policy: Policy, instruction: str, items: list[dict[str, Any]], workdir: str) -> str | None:
    """The loop model's rephrasing of `instruction`, or None when it drops a path or literal."""
    prompt = render("describe.j2", instruction=instruction, workdir=workdir)
    gen = policy.generate([[{"role": "user", "content": prompt}]], SamplingParams(temperature=0.0, max_new_tokens=400))
    text = gen[0].text.strip() if gen else ""
    must = [str(i[k]) for i in items for k in ("path", "src", "src2", "word", "old", "new", "text", "target", "n",
                                                           "mode")
            if i.get(k)]
    return text if text and all(m.strip() in text for m in must) else None


# ------------------------------------------------------------------------------- routine
def hindsight_tasks(policy: Policy, attempts: Attempts, params: HindsightParams | None = None,
                    parents: list[Task] | None = None) -> tuple[list[Task], dict[str, Any]]:
    """Explore `attempts.n` seeds (or the given `parents`) with `policy` and relabel each episode."""
    params = params or HindsightParams()
    seed, iteration, backend = attempts.seed, attempts.iteration, attempts.backend
    stats = Stats("hindsight")
    if parents is None:
        parents = seed_tasks(attempts.n, seed, attempts.report, params, stats)
        stats.attempts = len(parents) + sum(stats.rejected.values())
    else:
        stats.attempts = len(parents)
        unique: dict[str, Task] = {}
        for p in parents:
            if exploration_task(p, params).id in unique:
                stats.reject("duplicate_seed", p.id)
            unique.setdefault(exploration_task(p, params).id, p)
        parents = list(unique.values())
    explore = [exploration_task(p, params) for p in parents]
    sampling = SamplingParams(temperature=params.temperature, max_new_tokens=params.max_new_tokens, seed=seed)
    harness = HarnessConfig(max_turns=params.max_turns, command_timeout_s=params.command_timeout_s)
    exploring = RolloutConfig(batch_size=params.batch_size, backend=backend, harness=harness, sampling=sampling,
                              iteration=-1 if iteration is None else iteration, suite="hindsight-explore")
    summaries = run_rollouts(explore, policy, exploring, out_dir=attempts.out_dir, progress=attempts.progress)
    tasks: list[Task] = []
    ids: set[str] = set()
    for i, (parent, summ) in enumerate(zip(parents, summaries, strict=True)):
        if summ.outcome in ("error", "skipped"):
            stats.reject("episode_error", f"{parent.id}: {summ.error}")
            continue
        try:
            task = relabel(parent, episode_commands(summ), params=params, backend=backend,
                           rng=random.Random(f"{seed}|{i}"), iteration=iteration, seed=seed, policy=policy)
        except Rejected as r:
            stats.reject(r.reason, f"{parent.id}: {r.detail}")
            continue
        if stats.first(task.id, ids):
            tasks.append(task)
    stats.produced = len(tasks)
    return tasks, stats.to_json()
