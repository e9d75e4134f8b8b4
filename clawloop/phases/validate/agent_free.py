"""Agent-free validation: keep a task only if it is sound without asking any model.

A task is kept when it parses; it is no exact duplicate of an earlier task and shares no
instruction n-grams with the held-out suites (beyond a threshold); its reference solution
passes while a no-op fails; a second oracle run in a fresh sandbox agrees with the first; and
it is no near-duplicate (word-shingle Jaccard of instruction and files) of a task already kept.

Sandboxes: per task, sandbox A runs the oracle from a clean start (it must pass); sandbox B
runs the no-op verdict (it must fail: a no-op leaves the workspace as prepared, so B is reused)
and then the oracle a second time (same verdict and reward: determinism). With `fast` each
sandbox needs few execs: setup and oracle are scripted together, then the verifier runs as in an
episode (`episode.check_oracle` on a `TaskEnvironment`). The oracle never sees the verifier's dirs (/tests and
/logs/verifier are mounted fresh for the verifier only), so a reference solution that writes the
reward or edits the tests fails; one that left files there is rejected as "oracle_tampers" —
the grounded proposer must not emit tasks whose solution reaches for the reward. Cheap static checks
run first so no sandbox time goes to them.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from clawloop.core.agent.oracle import LIST_TOUCHED, OracleCheck, check_oracle, run_oracle
from clawloop.core.executor import ExecutorParams, Ran, executor_params, run_all
from clawloop.core.tasks.environment import TaskEnvironment, TaskSetupError, refuse_unverifiable
from clawloop.core.tasks.harbor import find_task_dirs
from clawloop.core.tasks.suite import load_suite
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError
from sandbox.base import SandboxConfig, SandboxError

REASONS = ("parse", "duplicate", "heldout_overlap", "needs_image", "no_solution", "setup_error",
           "noop_passes", "noop_error", "oracle_tampers", "oracle_fails", "oracle_error", "nondeterministic",
           "sandbox_error", "near_duplicate")
"""Rejection reasons, in the order the checks run."""


class AgentFreeParams(BaseModel):
    """Knobs of agent-free validation."""

    model_config = ConfigDict(extra="forbid")

    near_duplicate_threshold: float = Field(0.9, gt=0, le=1)
    """Word-shingle Jaccard (instruction + files) at or above which a task is a near-duplicate."""
    shingle_words: int = Field(3, ge=1)
    """Words per shingle for the near-duplicate check."""
    file_chars: int = Field(2000, ge=0)
    """Characters of each file's text that enter the near-duplicate shingles."""
    heldout_ngram: int = Field(8, ge=1)
    """n of the instruction word n-grams compared with the held-out suites."""
    heldout_threshold: float = Field(0.3, gt=0, le=1)
    """Share of a task's instruction n-grams found in held-out instructions that rejects it."""
    determinism: bool = True
    """Run the oracle a second time in a fresh sandbox and require the same verdict."""
    fast: bool = True
    """One exec per sandbox (setup, no-op verdict, oracle, verdict scripted together; the oracle
    is trusted). False runs the episode protocol step by step (prepare, verify, run_oracle)."""
    examples: int = Field(5, ge=0)
    """Example ids kept per rejection reason in the report."""


# ------------------------------------------------------------------------------ text checks
def _norm_words(text: str) -> list[str]:
    return [w for w in (t.rstrip(".") for t in re.findall(r"[\w./-]+", text.lower())) if w]


def ngrams(words: list[str], n: int) -> set[tuple[str, ...]]:
    """Word n-grams; a text shorter than n is one gram."""
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def exact_key(task: Task) -> str:
    """Normalized instruction + hash of the files: equal keys are duplicates."""
    h = hashlib.sha256(" ".join(_norm_words(task.instruction)).encode())
    for path in sorted(task.files):
        h.update(b"\0" + path.encode() + b"\0" + task.files[path].content.encode())
    return h.hexdigest()[:24]


def shingles(task: Task, params: AgentFreeParams) -> set[tuple[str, ...]]:
    """Word shingles of the instruction plus file paths and the head of each text file."""
    text = [task.instruction]
    for path in sorted(task.files):
        spec = task.files[path]
        text.append(path + " " + (spec.content[:params.file_chars] if spec.encoding == "utf-8" else ""))
    return ngrams(_norm_words("\n".join(text)), params.shingle_words)


def _norm_command(cmd: str) -> str:
    return " ".join(cmd.split())


class HeldoutIndex:
    """Instruction n-grams and reference commands of the held-out tasks."""

    def __init__(self, tasks: Iterable[Task], n: int = 8) -> None:
        self.n = n
        self.grams: dict[tuple[str, ...], str] = {}
        self.commands: dict[str, str] = {}
        for t in tasks:
            for g in ngrams(_norm_words(t.instruction), n):
                self.grams.setdefault(g, t.id)
            for step in t.solution.steps if t.solution else ():
                # Only commands specific enough to give a held-out answer away (InterCode's gold
                # commands are one line each; `ls` or `cd /x` alone says nothing).
                if len(step.split()) >= 3:
                    self.commands.setdefault(_norm_command(step), t.id)

    def same_command(self, task: Task) -> tuple[str, str] | None:
        """(command, held-out id) when a step of the task's reference solution is a held-out
        task's reference command (whitespace aside): training on it would teach the answer."""
        for step in task.solution.steps if task.solution else ():
            hid = self.commands.get(_norm_command(step))
            if hid is not None:
                return step, hid
        return None

    def overlap(self, task: Task) -> tuple[float, str | None]:
        """(share of the task's n-grams seen in held-out instructions, one held-out id)."""
        grams = ngrams(_norm_words(task.instruction), self.n)
        hits = [self.grams[g] for g in grams if g in self.grams]
        return (len(hits) / len(grams) if grams else 0.0), (hits[0] if hits else None)


class NearDuplicateIndex:
    """Kept tasks' shingle sets with an inverted index, for Jaccard against new ones."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.sets: list[tuple[str, set[tuple[str, ...]]]] = []
        self.postings: dict[tuple[str, ...], list[int]] = {}

    def match(self, sh: set[tuple[str, ...]]) -> tuple[str | None, float]:
        shared: Counter[int] = Counter()
        for s in sh:
            shared.update(self.postings.get(s, ()))
        best, best_j = None, 0.0
        for k, c in shared.items():
            j = c / (len(sh) + len(self.sets[k][1]) - c)
            if j > best_j:
                best, best_j = self.sets[k][0], j
        return (best, best_j) if best_j >= self.threshold else (None, best_j)

    def add(self, task_id: str, sh: set[tuple[str, ...]]) -> None:
        k = len(self.sets)
        self.sets.append((task_id, sh))
        for s in sh:
            self.postings.setdefault(s, []).append(k)


# ---------------------------------------------------------------------------- sandbox checks
def check_in_sandbox(task: Task, backend: str = "bwrap", config: SandboxConfig | None = None,
                     determinism: bool = True, fast: bool = True) -> tuple[str | None, str]:
    """(rejection reason or None, detail) from the no-op, oracle and determinism runs.

    Sandbox A runs the oracle from a clean start; sandbox B runs the no-op verdict and then the
    oracle again (the second run of the determinism check). Without determinism B is skipped
    after A when A fails, and otherwise runs only the no-op verdict."""
    why = TaskEnvironment(task, backend, config).skip_reason()
    if why:
        return "needs_image", why
    if task.solution is None:
        return "no_solution", "no reference solution"
    try:
        with TaskEnvironment(task, backend, config) as env:
            check = check_oracle(env) if fast else _oracle_slow(env)
        first = check.oracle
        if check.touched:
            return "oracle_tampers", (f"the setup or reference solution wrote under {', '.join(check.touched)}, "
                                      f"the verifier's dirs (oracle verdict: {first.outcome}, reward {first.reward})")
        if first.outcome != "passed":
            return ("oracle_error" if first.outcome == "error" else "oracle_fails"), (
                first.reason or f"reward {first.reward}: {first.output.strip()[-300:]}")
        with TaskEnvironment(task, backend, config) as env:
            if fast and determinism:
                res = check_oracle(env, noop_first=True)
                noop, second = res.noop, res.oracle
            else:
                env.prepare()
                noop = env.verify()
                second = _oracle_slow(env, prepared=True).oracle if determinism else None
        assert noop is not None
        if noop.outcome == "passed":
            return "noop_passes", f"reward {noop.reward} with an untouched workspace"
        if noop.outcome == "error":
            return "noop_error", noop.reason or ""
        if second is not None and (second.outcome, second.reward) != (first.outcome, first.reward):
            return "nondeterministic", (f"second oracle run: {second.outcome} reward {second.reward} "
                                        f"({second.reason or second.output.strip()[-200:]})")
    except TaskSetupError as e:
        return "setup_error", str(e)
    except (SandboxError, ClawloopError, OSError) as e:
        return "sandbox_error", str(e)
    return None, ""


def _oracle_slow(env: TaskEnvironment, prepared: bool = False) -> OracleCheck:
    """The episode protocol step by step; `touched` as `check_oracle` reports it (one more exec,
    the harness's own: not one of the agent's steps)."""
    if not prepared:
        env.prepare()
    run_oracle(env)
    left = env.sandbox.exec(LIST_TOUCHED, timeout=30, cwd="/")
    return OracleCheck(env.verify(), touched=tuple(left.output.split()))


SAME_TASK_SPLITS = ("synth-heldout",)
"""benchmarks/ folders that are held-out splits of synthesis's own templates: kept off by the same
task only (`heldout_instances`), never by n-grams, which every pool shares with them by design."""


def _benchmarks_root() -> Path | None:
    for root in (Path("benchmarks"), Path(__file__).resolve().parents[3] / "benchmarks"):
        if root.is_dir():
            return root
    return None


def default_heldout() -> list[Path]:
    """The held-out suites by default: ./benchmarks, else the checkout's benchmarks/ (all Harbor
    tasks), less the same-task splits (`default_heldout_instances`)."""
    root = _benchmarks_root()
    if root is None:
        return []
    return [p for p in sorted(root.iterdir()) if p.is_dir() and p.name not in SAME_TASK_SPLITS]


def default_heldout_instances() -> list[Path]:
    """The same-task held-out splits under the default benchmarks/ (SAME_TASK_SPLITS)."""
    root = _benchmarks_root()
    return [root / n for n in SAME_TASK_SPLITS if root is not None and (root / n).is_dir()]


def load_heldout(paths: Iterable[str | Path]) -> list[Task]:
    """Tasks of held-out suites (directories searched for Harbor tasks, or pools); a task that
    fails to load is left out; a path that does not exist is an error."""
    tasks: list[Task] = []
    for p in map(Path, paths):
        if p.is_dir() and not find_task_dirs(p):
            continue
        tasks += load_suite(p).tasks
    return tasks


# ---------------------------------------------------------------------------------- the pool
def validate_pool(tasks: list[Task], backend: str = "bwrap", jobs: int = 2,
                  heldout_tasks: Iterable[Task] = (), params: AgentFreeParams | None = None, *,
                  config: SandboxConfig | None = None, parse_errors: Iterable[str] = (),
                  on_done: Callable[[int], None] | None = None,
                  executor: ExecutorParams | str | None = None,
                  heldout_instances: Iterable[Task] = ()) -> tuple[list[Task], dict[str, Any]]:
    """Filter `tasks` (order kept); returns (kept, report).

    report: {"input", "kept", "rejected": {reason: count}, "examples": {reason: [{"id", "detail"}]},
    "backend", "jobs", "executor", "duration_s", "tasks_per_s", "params"} (and "nodes": sandbox
    checks per Ray node, on the ray executor). Parse errors passed in count as reason "parse".
    `on_done(n)` is called as tasks finish (progress). `executor`: where the sandbox checks run
    (clawloop.core.executor: local threads, or Ray tasks); the verdicts do not depend on it.
    `heldout_instances`: tasks of a held-out split of synthesis's own templates (synth-heldout):
    a task equal to one of them (instruction and files, `exact_key`) is dropped as heldout_overlap,
    where `heldout_tasks` drop any task sharing n-grams or a reference command.
    """
    refuse_unverifiable(backend)
    params = params or AgentFreeParams()
    t0 = time.monotonic()
    rejected: dict[str, list[dict[str, str]]] = {r: [] for r in REASONS}
    for err in parse_errors:
        rejected["parse"].append({"id": err.split(": ", 1)[0], "detail": err})

    heldout = HeldoutIndex(heldout_tasks, params.heldout_ngram)
    instances = {exact_key(h): h.id for h in heldout_instances}
    seen: set[str] = set()
    candidates: list[Task] = []
    for t in tasks:
        key = exact_key(t)
        if key in seen:
            rejected["duplicate"].append({"id": t.id, "detail": "same instruction and files as an earlier task"})
            continue
        seen.add(key)
        if key in instances:
            rejected["heldout_overlap"].append({"id": t.id, "detail": f"the same task (instruction and files) as "
                                                f"held-out task {instances[key]}"})
            continue
        share, hid = heldout.overlap(t)
        if hid is not None and share >= params.heldout_threshold:
            rejected["heldout_overlap"].append({"id": t.id, "detail": f"{share:.0%} of its {params.heldout_ngram}-grams "
                                                f"appear in held-out instructions (e.g. task {hid})"})
            continue
        same = heldout.same_command(t)
        if same is not None:
            rejected["heldout_overlap"].append({"id": t.id, "detail": f"its reference command {same[0][:80]!r} is "
                                                f"held-out task {same[1]}'s"})
            continue
        candidates.append(t)

    ex = executor_params(executor)
    check = partial(check_in_sandbox, backend=backend, config=config, determinism=params.determinism,
                    fast=params.fast)
    ran = run_all(check, candidates, jobs=jobs, executor=ex,
                  on_done=(lambda _k, _r: on_done(1)) if on_done else None)
    verdicts = [r.value for r in ran]

    near = NearDuplicateIndex(params.near_duplicate_threshold)
    kept: list[Task] = []
    for t, (reason, detail) in zip(candidates, verdicts, strict=True):
        if reason is None:
            sh = shingles(t, params)
            other, j = near.match(sh)
            if other is not None:
                reason, detail = "near_duplicate", f"Jaccard {j:.2f} with kept task {other}"
            else:
                near.add(t.id, sh)
                kept.append(t)
                continue
        rejected[reason].append({"id": t.id, "detail": detail[:500]})

    took = time.monotonic() - t0
    n_in = len(tasks) + len(rejected["parse"])
    return kept, {
        "input": n_in, "kept": len(kept),
        "rejected": {r: len(v) for r, v in rejected.items() if v},
        "examples": {r: v[:params.examples] for r, v in rejected.items() if v},
        "backend": backend, "jobs": jobs, "executor": ex.kind, **_nodes(ran), "duration_s": round(took, 3),
        "tasks_per_s": round(len(tasks) / took, 2) if took > 0 else 0.0,
        "params": params.model_dump(),
    }


def _nodes(ran: list[Ran[Any]]) -> dict[str, dict[str, int]]:
    """{"nodes": {node id: sandbox checks}} when a Ray executor ran them, else {}."""
    nodes = Counter(r.node for r in ran if r.node is not None)
    return {"nodes": dict(sorted(nodes.items()))} if nodes else {}
