"""One episode of a simple agent (oracle, no-op) as an EpisodeRecord (clawloop.core.trajectory), and
validation's trusted fast path.

The episode's lifecycle (begin → agent → verify in a clean world → close, trouble turned into
outcomes) is `clawloop.core.agent.episode.Episode` around `clawloop.core.tasks.environment.TaskEnvironment`;
the verifier and reward rules are `clawloop.core.tasks.verifier`. Here: `run_oracle` (the reference solution, its helper files at
/solution), `run_episode` (one record of a simple agent on any format: the task's adapter decides
how it is graded and whether its record carries scores), and `check_oracle` (setup and oracle
scripted in one exec for validation, then the verifier as `TaskEnvironment.verify` runs it).

Errors (setup broke, verifier wrote no usable reward, sandbox failed) are outcome "error", never
"failed"; a simple agent that fails otherwise than by task trouble (a test's assertion) raises.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from clawloop.core.agent.episode import Episode
from clawloop.core.protocols import Agent, Environment
from clawloop.core.tasks.answer import is_answer_task
from clawloop.core.tasks.environment import (
    SETUP_FAILED,
    SETUP_TIMEOUT_S,
    TaskEnvironment,
    TaskSetupError,
    write_files,
)
from clawloop.core.tasks.task import Task
from clawloop.core.tasks.verifier import Verdict, harbor_env, host_mounts, read_logs_file, write_dir
from clawloop.core.trajectory import EpisodeRecord, Step
from clawloop.errors import ClawloopError
from sandbox._paths import rmtree_force
from sandbox.base import ExecResult, SandboxConfig, SandboxError


# ------------------------------------------------------------------------------ simple agents
# Agents (clawloop.core.protocols.Agent): each acts on a prepared environment through `env.exec`
# and returns its results.
def run_oracle(env: Environment) -> list[ExecResult]:
    """Run the reference solution: helper files at /solution, each step in the workdir."""
    task = env.task
    if task.solution is None:
        raise ClawloopError(f"task {task.id}: has no reference solution")
    sb, extra = env.sandbox, harbor_env(task, "solution")
    host = write_dir(task.solution.files, "solution-", sb) if task.solution.files else None
    results: list[ExecResult] = []
    mounted = False
    try:
        if host is not None:
            try:
                sb.mount(host, "/solution")
                mounted = True
            except SandboxError:  # a backend that cannot mount there: plain files
                for rel, spec in task.solution.files.items():
                    sb.write_file(f"/solution/{rel}", spec.data(), spec.mode)
        deadline = time.monotonic() + task.limits.agent_timeout_s
        for step in task.solution.steps:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            results.append(env.exec(step, timeout=left, env=extra))
    finally:
        if host is not None:
            try:
                if mounted:
                    sb.unmount("/solution")
            finally:
                rmtree_force(host)
    return results


def noop_agent(env: Environment) -> list[ExecResult]:
    """Does nothing: the verifier must fail it."""
    return []


SIMPLE_AGENTS: dict[str, Agent] = {"oracle": run_oracle, "noop": noop_agent}


def simple_agent(agent: str) -> Agent:
    """The simple agent named `agent`; an unknown name is a ClawloopError naming the known ones."""
    fn = SIMPLE_AGENTS.get(agent)
    if fn is None:
        raise ClawloopError(f"--agent: unknown simple agent {agent!r} (known: {', '.join(SIMPLE_AGENTS)})")
    return fn


def run_episode(task: Task, agent: str | Agent = "oracle", backend: str = "bwrap",
                config: SandboxConfig | None = None, *, suite: str | None = None,
                name: str | None = None) -> EpisodeRecord:
    """One episode of a simple agent (clawloop.core.agent.episode: begin, act, conclude). Never raises
    for task trouble (outcome "error"); a task that cannot run here is "skipped". Formats with
    fractional scores name their benchmark in the record and give its scores."""
    agent_name = agent if isinstance(agent, str) else getattr(agent, "__name__", "agent")
    fn = simple_agent(agent) if isinstance(agent, str) else agent
    episode = Episode(task, backend, config, needs_solution=fn is run_oracle)
    if episode.begin():
        episode.act(fn)
    episode.conclude()
    bench = episode.env.adapter.benchmark if episode.env is not None else None
    v = episode.verdict
    rec = EpisodeRecord(task.id, name or task.id, suite or task.source, task.skill, task.level, agent_name,
                        episode.outcome or "error", benchmark=bench)
    rec.reward = v.reward if v is not None else None
    rec.reason = v.reason if v is not None else episode.reason
    if v is not None:
        rec.verifier_output = v.output
        if bench:
            rec.scores = v.scores
    if rec.outcome != "skipped":
        rec.duration_s = episode.duration_s
    rec.timing = episode.timing
    steps = episode.env.steps if episode.env is not None else []
    rec.steps = [Step(i, tool="bash", command=c, exit_code=r.exit_code, output=r.output, timed_out=r.timed_out,
                      duration_s=r.duration_s) for i, (c, r) in enumerate(steps)]
    return rec


# ------------------------------------------------------------------ trusted fast path (validation)
HARNESS = "/logs/clawloop"
"""Where check_oracle's script leaves notes for the host (which setup command failed, the phase)."""
_HARNESS_MAX = 4096
LIST_TOUCHED = ('shopt -s nullglob dotglob; for d in /logs/verifier /tests; do if [ -d "$d" ]; then '
                'e=("$d"/*); [ ${#e[@]} -eq 0 ] || echo "$d"; elif [ -e "$d" ] || [ -L "$d" ]; then echo "$d"; fi; done')
"""Shell that lists the verifier's dirs holding anything: a task's setup or solution must leave
nothing there (the agent-visible ones; the verifier gets fresh ones). What `ls -A DIR` would
print something for (a dir with entries, or a file in its place), in builtins: no process
(it ends a script: the glob options stay set)."""


@dataclass(frozen=True)
class OracleCheck:
    """Verdicts of one validation run: the no-op's (when asked) and the oracle's."""

    oracle: Verdict
    noop: Verdict | None = None
    touched: tuple[str, ...] = ()
    """Verifier dirs (/logs/verifier, /tests) the setup or the oracle left files in: the task's
    solution reaches for its reward (in vain: the verifier gets fresh ones)."""


def _exports(env: dict[str, str]) -> str:
    return "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items() if k.isidentifier())


def _harness(hd: Path, name: str) -> str:
    """A note of the harness dir as text ("" when absent). The oracle could have replaced it:
    no symlink is followed and at most _HARNESS_MAX bytes are read."""
    try:
        data = read_logs_file(hd, name, _HARNESS_MAX)
    except SandboxError as e:
        return f"[{e}]"
    return (data or b"").decode(errors="replace").strip()


def check_oracle(env: TaskEnvironment, *, noop_first: bool = False) -> OracleCheck:
    """Setup and oracle scripted in one exec, then the verifier as `env.verify` runs it — for validation.

    The oracle never sees the verifier's dirs: /tests and /logs/verifier are mounted, fresh, only
    for `verify`, so a solution that writes the reward or edits the tests just fails, and
    `touched` says that it tried. With `noop_first`, a no-op verdict comes between the setup and
    the oracle (one exec each). Raises TaskSetupError when the setup fails.
    """
    sb, task = env.sandbox, env.task
    if task.solution is None:
        raise ClawloopError(f"task {task.id}: has no reference solution")
    write_files(sb, env.setup_task)
    wd, h = shlex.quote(task.workdir), HARNESS
    setup = [f"mkdir -p {wd} && cd {wd} || {{ echo workdir > {h}/failed; exit {SETUP_FAILED}; }}"]
    setup += [f"(\n{cmd}\n) || {{ s=$?; echo \"setup command {i} failed with status $s\" > {h}/failed; "
              f"exit {SETUP_FAILED}; }}" for i, cmd in enumerate(env.setup_task.setup, 1)]
    sol_env = _exports(harbor_env(task, "solution"))
    # An answer task is graded on its last command's output (clawloop.core.tasks.answer): that step runs
    # apart, through env.exec, so the host records its output as it records an agent's.
    steps = task.solution.steps
    answer_step = steps[-1] if is_answer_task(task) and steps else None
    oracle = [f"echo oracle > {h}/phase",
              *(f"( cd {wd} && {sol_env}\n{step}\n)" for step in (steps[:-1] if answer_step else steps)),
              f"{LIST_TOUCHED} >> {h}/touched; exit 0"]
    lim, task_env = task.limits, dict(task.env)
    setup_s = max(SETUP_TIMEOUT_S, lim.command_timeout_s)
    dirs = {h: sb.scratch_dir("harness-")}
    if task.solution.files:
        dirs["/solution"] = write_dir(task.solution.files, "solution-", sb)

    def as_files(target: str) -> bool:  # a backend that cannot mount at /solution gets plain files
        if target == "/solution" and task.solution is not None:
            for rel, spec in task.solution.files.items():
                sb.write_file(f"/solution/{rel}", spec.data(), spec.mode)
            return True
        return False

    with host_mounts(sb, dirs, as_files):
        hd = dirs[h]
        if not noop_first or env.setup_task.setup or task.workdir != sb.config.workspace:  # else nothing to set up
            r = sb.exec("\n".join(setup if noop_first else setup + oracle), cwd="/", env=task_env,
                        timeout=setup_s if noop_first else setup_s + lim.agent_timeout_s)
            failed = _harness(hd, "failed")
            if failed or (r.timed_out and _harness(hd, "phase") != "oracle"):
                last = r.output.strip().splitlines()[-1:] or [""]
                raise TaskSetupError(f"task {task.id}: setup failed ({failed or 'timed out'}) "
                                     f"{last[0][:200]}".rstrip(), r.output)
        noop = None
        if noop_first:
            noop = env.verify()
            r = sb.exec("\n".join(oracle), timeout=lim.agent_timeout_s, cwd="/", env=task_env)
        touched = tuple(_harness(hd, "touched").split())
        if r.timed_out:
            return OracleCheck(Verdict("error", None, f"the oracle timed out (budget {lim.agent_timeout_s:g}s)",
                                       r.output, r.duration_s), noop, touched)
        if answer_step is not None:
            env.exec(f"{sol_env}\n{answer_step}" if sol_env else answer_step,
                     timeout=max(1.0, lim.agent_timeout_s - r.duration_s))
        return OracleCheck(env.verify(), noop, touched)
