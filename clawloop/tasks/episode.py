"""The episode protocol: prepare → agent → verify, as pieces other stages reuse.

`prepare` places the task's files and runs its setup; `run_oracle` runs the reference solution;
`verify` runs the hidden verifier in a clean world built only now, after every command of the
agent ended (`clawloop.tasks.verifier`): fresh /tests, an empty /logs/verifier, a fresh HOME and
TMPDIR, Python and git that take nothing from the workspace, cwd the workdir as the agent left it.
`run_episode` ties them together for simple agents (oracle, noop).

Reward precedence: only reward.txt / reward.json in that fresh /logs/verifier count, read on the
host without following symlinks and size-capped; either one counts, and when both exist they must
agree (an agent script the verifier executes can write either). A reward that is not a finite
number in [0, 1] is an error. Errors (setup broke, verifier wrote no usable reward, sandbox failed)
are outcome "error", never "failed".
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from clawloop.errors import ClawloopError
from clawloop.tasks.model import Task
from clawloop.tasks.verifier import (  # noqa: F401  (re-exported: the episode protocol's names)
    PASS_THRESHOLD,
    Verdict,
    harbor_env,
    host_mounts,
    read_logs_file,
    read_reward,
    run_verifier,
    tmp_base,
    verdict,
    write_dir,
)
from sandbox.base import ExecResult, Sandbox, SandboxConfig, SandboxError

SETUP_TIMEOUT_S = 120.0
_SETUP_FAILED = 97


class TaskSetupError(ClawloopError):
    """The task's files or setup commands could not be put in place (outcome "error")."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


@dataclass(frozen=True)
class Step:
    """One command the agent ran and what came back."""

    command: str
    exit_code: int
    output: str
    timed_out: bool
    duration_s: float


@dataclass
class EpisodeRecord:
    """One episode of an agent (oracle, no-op or model) on one task."""

    task_id: str
    name: str
    suite: str
    skill: str
    level: int
    agent: str
    outcome: Literal["passed", "failed", "error", "skipped"]
    reward: float | None = None
    reason: str | None = None
    duration_s: float = 0.0
    verifier_output: str = ""
    steps: list[Step] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    """Tokens of a model agent's episode (0 for oracle and no-op)."""
    unloadable: bool = False
    """The task never loaded (reason says why): listed apart, never under a skill."""
    node: str | None = None
    """Hex id of the Ray node that ran the episode (`executor: ray`); None when it ran here."""

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def to_episode_row(self, *, sample: int = 0, policy_id: str | None = None,
                       iteration: int = -1) -> dict[str, Any]:
        """A row of clawloop.trajectory.EPISODE_SCHEMA."""
        from clawloop.trajectory import clip

        messages = [{"role": "assistant", "content": "",
                     "tool_calls": [{"type": "function", "function": {"name": "bash", "arguments":
                                     orjson.dumps({"command": s.command}).decode()}}]} for s in self.steps]
        return {
            "episode_id": f"{self.task_id}-{sample}-{self.agent}", "task_id": self.task_id,
            "suite": self.suite, "skill": self.skill, "level": self.level, "sample": sample,
            "policy_id": policy_id or self.agent, "iteration": iteration, "reward": self.reward,
            "passed": self.passed, "outcome": self.outcome,
            "termination": "error" if self.outcome in ("error", "skipped") else "submit",
            "error": self.reason if self.outcome in ("error", "skipped") else None,
            "n_turns": len(self.steps), "n_format_errors": 0, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "duration_s": self.duration_s, "messages": orjson.dumps(messages).decode(),
            "verifier_output": clip(self.verifier_output) if self.verifier_output else None,
        }


# ------------------------------------------------------------------------------ the pieces
def _write_files(sb: Sandbox, task: Task) -> None:
    try:
        for path, spec in task.files.items():
            sb.write_file(path, spec.data(), spec.mode)
    except (SandboxError, OSError) as e:
        raise TaskSetupError(f"task {task.id}: cannot write its files ({e})") from None


def prepare(sb: Sandbox, task: Task) -> None:
    """Write the task's files and run its setup (one exec, none when there is nothing to run)."""
    _write_files(sb, task)
    lines = []
    if task.workdir != sb.config.workspace:
        lines.append(f"mkdir -p {shlex.quote(task.workdir)} || exit {_SETUP_FAILED}")
    if task.setup:
        lines.append(f"cd {shlex.quote(task.workdir)} || exit {_SETUP_FAILED}")
        for i, cmd in enumerate(task.setup, 1):
            lines.append(f"(\n{cmd}\n) || {{ s=$?; echo \"[setup command {i} failed with status $s]\"; "
                         f"exit {_SETUP_FAILED}; }}")
    if not lines:
        return
    r = sb.exec("\n".join(lines), timeout=max(SETUP_TIMEOUT_S, task.limits.command_timeout_s), cwd="/",
                env=dict(task.env))
    if r.exit_code != 0:
        why = "timed out" if r.timed_out else f"exit status {r.exit_code}"
        last = r.output.strip().splitlines()[-1:] or [""]
        raise TaskSetupError(f"task {task.id}: setup failed ({why}) {last[0][:200]}".rstrip(), r.output)


def run_oracle(sb: Sandbox, task: Task) -> list[ExecResult]:
    """Run the reference solution: helper files at /solution, each step in the workdir."""
    if task.solution is None:
        raise ClawloopError(f"task {task.id}: has no reference solution")
    env = {**task.env, **harbor_env(task, "solution")}
    host = write_dir(task.solution.files, "clawloop-solution-") if task.solution.files else None
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
            results.append(sb.exec(step, timeout=left, cwd=task.workdir, env=env))
    finally:
        if host is not None:
            try:
                if mounted:
                    sb.unmount("/solution")
            finally:
                shutil.rmtree(host, ignore_errors=True)
    return results


def verify(sb: Sandbox, task: Task) -> Verdict:
    """Run the verifier in a clean world on the workspace as the agent left it; read the reward."""
    with run_verifier(sb, task) as run:
        return verdict(run.logs, run.result, task.limits.verifier_timeout_s, run.duration_s)


# ------------------------------------------------------------------ trusted fast path (validation)
HARNESS = "/logs/clawloop"
"""Where check_oracle's script leaves notes for the host (which setup command failed, the phase)."""
_HARNESS_MAX = 4096
LIST_TOUCHED = 'for d in /logs/verifier /tests; do [ -z "$(ls -A "$d" 2>/dev/null)" ] || echo "$d"; done'
"""Shell that lists the verifier's dirs holding anything: a task's setup or solution must leave
nothing there (the agent-visible ones; the verifier gets fresh ones)."""


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


def check_oracle(sb: Sandbox, task: Task, *, noop_first: bool = False) -> OracleCheck:
    """Setup and oracle scripted in one exec, then the verifier as `verify` runs it — for validation.

    The oracle never sees the verifier's dirs: /tests and /logs/verifier are mounted, fresh, only
    for `verify`, so a solution that writes the reward or edits the tests just fails, and
    `touched` says that it tried. With `noop_first`, a no-op verdict comes between the setup and
    the oracle (one exec each). Raises TaskSetupError when the setup fails.
    """
    if task.solution is None:
        raise ClawloopError(f"task {task.id}: has no reference solution")
    _write_files(sb, task)
    wd, h = shlex.quote(task.workdir), HARNESS
    setup = [f"mkdir -p {wd} && cd {wd} || {{ echo workdir > {h}/failed; exit {_SETUP_FAILED}; }}"]
    setup += [f"(\n{cmd}\n) || {{ s=$?; echo \"setup command {i} failed with status $s\" > {h}/failed; "
              f"exit {_SETUP_FAILED}; }}" for i, cmd in enumerate(task.setup, 1)]
    sol_env = _exports(harbor_env(task, "solution"))
    oracle = [f"echo oracle > {h}/phase", *(f"( cd {wd} && {sol_env}\n{step}\n)" for step in task.solution.steps),
              f"{LIST_TOUCHED} >> {h}/touched; exit 0"]
    lim, env = task.limits, dict(task.env)
    setup_s = max(SETUP_TIMEOUT_S, lim.command_timeout_s)
    dirs = {h: Path(tempfile.mkdtemp(prefix="clawloop-harness-", dir=tmp_base()))}
    if task.solution.files:
        dirs["/solution"] = write_dir(task.solution.files, "clawloop-solution-")

    def as_files(target: str) -> bool:  # a backend that cannot mount at /solution gets plain files
        if target == "/solution" and task.solution is not None:
            for rel, spec in task.solution.files.items():
                sb.write_file(f"/solution/{rel}", spec.data(), spec.mode)
            return True
        return False

    with host_mounts(sb, dirs, as_files):
        hd = dirs[h]
        if not noop_first or task.setup or task.workdir != sb.config.workspace:  # else nothing to set up
            r = sb.exec("\n".join(setup if noop_first else setup + oracle), cwd="/", env=env,
                        timeout=setup_s if noop_first else setup_s + lim.agent_timeout_s)
            failed = _harness(hd, "failed")
            if failed or (r.timed_out and _harness(hd, "phase") != "oracle"):
                last = r.output.strip().splitlines()[-1:] or [""]
                raise TaskSetupError(f"task {task.id}: setup failed ({failed or 'timed out'}) "
                                     f"{last[0][:200]}".rstrip(), r.output)
        noop = None
        if noop_first:
            noop = verify(sb, task)
            r = sb.exec("\n".join(oracle), timeout=lim.agent_timeout_s, cwd="/", env=env)
        touched = tuple(_harness(hd, "touched").split())
        if r.timed_out:
            return OracleCheck(Verdict("error", None, f"the oracle timed out (budget {lim.agent_timeout_s:g}s)",
                                       r.output, r.duration_s), noop, touched)
        return OracleCheck(verify(sb, task), noop, touched)


# ------------------------------------------------------------------------------ episodes
SimpleAgent = Callable[[Sandbox, Task], list[ExecResult]]
"""An agent that acts on a prepared sandbox and returns the results of its commands."""


def noop_agent(sb: Sandbox, task: Task) -> list[ExecResult]:
    """Does nothing: the verifier must fail it."""
    return []


SIMPLE_AGENTS: dict[str, SimpleAgent] = {"oracle": run_oracle, "noop": noop_agent}


def default_config() -> SandboxConfig:
    """Sandbox defaults with the task runtime (python3 + pytest, pandas, ...) mounted."""
    from clawloop.tasks.shell_lite import default_runtime_dir

    return SandboxConfig(runtime_dir=default_runtime_dir())


def sandbox_config(config: SandboxConfig | dict[str, Any] | None = None) -> SandboxConfig:
    """The config every episode's sandbox opens with: `config` (or its dict), else `default_config()`."""
    if config is None:
        return default_config()
    return config if isinstance(config, SandboxConfig) else SandboxConfig.model_validate(config)


def open_sandbox(backend: str, config: SandboxConfig | dict[str, Any] | None = None) -> Any:
    """`sandbox.open(backend, config)` as a context manager; None means `default_config()`."""
    import sandbox

    return sandbox.open(backend=backend, config=sandbox_config(config))


def skip_reason(task: Task, backend: str) -> str | None:
    """Why the task cannot run on this backend (it needs its Docker image), or None."""
    if backend == "docker":  # judged against the docker image, not the host
        from clawloop.tasks.harbor_docker import docker_skip_reason

        return docker_skip_reason(task)
    if task.needs_image:
        return f"needs its Docker image: {task.needs_image}"
    return None


def simple_agent(agent: str) -> SimpleAgent:
    """The simple agent named `agent`; an unknown name is a ClawloopError naming the known ones."""
    fn = SIMPLE_AGENTS.get(agent)
    if fn is None:
        raise ClawloopError(f"--agent: unknown simple agent {agent!r} (known: {', '.join(SIMPLE_AGENTS)})")
    return fn


Judge = Callable[[Sandbox, list[tuple[str, ExecResult]]], Verdict]
"""Grades an episode from its sandbox and the agent's (command, result) pairs."""


def play(rec: EpisodeRecord, task: Task, fn: SimpleAgent, backend: str, config: SandboxConfig | None,
         judge: Judge) -> Verdict | None:
    """Fill `rec` with one episode of the simple agent `fn` unless `rec.reason` already skips it:
    open a sandbox, prepare, act, `judge`, close. Returns the verdict; task or sandbox trouble is
    outcome "error" (and None), never raised."""
    if rec.reason is None and fn is run_oracle and task.solution is None:
        rec.reason = "no reference solution"
    if rec.reason:
        return None
    t0 = time.monotonic()
    v: Verdict | None = None
    try:
        with open_sandbox(backend, config) as sb:
            prepare(sb, task)
            commands = task.solution.steps if fn is run_oracle and task.solution else []
            results = fn(sb, task)
            pairs = list(zip(commands or ["?"] * len(results), results, strict=False))
            rec.steps = [Step(c, r.exit_code, r.output, r.timed_out, r.duration_s) for c, r in pairs]
            v = judge(sb, pairs)
        rec.outcome, rec.reward, rec.reason, rec.verifier_output = v.outcome, v.reward, v.reason, v.output
    except (ClawloopError, SandboxError, OSError) as e:
        rec.outcome, rec.reason, v = "error", str(e), None
    rec.duration_s = time.monotonic() - t0
    return v


def run_episode(task: Task, agent: str | SimpleAgent = "oracle", backend: str = "bwrap",
                config: SandboxConfig | None = None, *, suite: str | None = None,
                name: str | None = None) -> EpisodeRecord:
    """Open a sandbox, prepare, let the agent act, verify, close. Never raises for task trouble."""
    agent_name = agent if isinstance(agent, str) else getattr(agent, "__name__", "agent")
    fn = simple_agent(agent) if isinstance(agent, str) else agent
    rec = EpisodeRecord(task.id, name or task.id, suite or task.source, task.skill, task.level, agent_name,
                        "skipped")
    rec.reason = skip_reason(task, backend)
    play(rec, task, fn, backend, config, lambda sb, _: verify(sb, task))
    return rec
