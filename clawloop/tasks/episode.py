"""The episode protocol: prepare → agent → verify, as pieces other stages reuse.

`prepare` places the task's files and runs its setup; `run_oracle` runs the reference solution;
`verify` copies the hidden tests in only now (a fresh mount at /tests) with a fresh, empty
/logs/verifier over whatever the agent left there, runs the entry script on the workspace as the
agent left it and reads the reward from the host side of that mount. `run_episode` ties them
together for simple agents (oracle, noop). Errors (setup broke, verifier wrote no reward,
sandbox failed) are outcome "error", never "failed".
"""

from __future__ import annotations

import contextlib
import math
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
from clawloop.tasks.model import FileSpec, Task
from sandbox.base import ExecResult, Sandbox, SandboxConfig, SandboxError

PASS_THRESHOLD = 1.0 - 1e-9
"""A verdict passes when reward >= this."""
SETUP_TIMEOUT_S = 120.0
_SETUP_FAILED = 97


class TaskSetupError(ClawloopError):
    """The task's files or setup commands could not be put in place (outcome "error")."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


@dataclass(frozen=True)
class Verdict:
    """What the verifier said."""

    outcome: Literal["passed", "failed", "error"]
    reward: float | None
    reason: str | None
    output: str
    duration_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


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
    """One episode of a simple agent on one task."""

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

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def to_episode_row(self, *, sample: int = 0, policy_id: str | None = None,
                       iteration: int = -1) -> dict[str, Any]:
        """A row of clawloop.trajectory.EPISODE_SCHEMA."""
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
            "n_turns": len(self.steps), "n_format_errors": 0, "prompt_tokens": 0, "completion_tokens": 0,
            "duration_s": self.duration_s, "messages": orjson.dumps(messages).decode(),
        }


# ------------------------------------------------------------------------------ the pieces
def harbor_env(task: Task, section: str) -> dict[str, str]:
    """`[<section>] env` of the task's original task.toml (verifier, solution), if any."""
    h = task.metadata.get("harbor")
    toml = h.get("task_toml") if isinstance(h, dict) else None
    sec = toml.get(section) if isinstance(toml, dict) else None
    env = sec.get("env") if isinstance(sec, dict) else None
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def prepare(sb: Sandbox, task: Task) -> None:
    """Write the task's files and run its setup (one exec, none when there is nothing to run)."""
    try:
        for path, spec in task.files.items():
            sb.write_file(path, spec.data(), spec.mode)
    except (SandboxError, OSError) as e:
        raise TaskSetupError(f"task {task.id}: cannot write its files ({e})") from None
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


def tmp_base() -> str:
    """Where host-side temp dirs go: the sandbox's own temp root (fast /dev/shm where it exists)."""
    from sandbox._paths import tmp_root

    return str(tmp_root())


def _write_dir(files: dict[str, FileSpec], prefix: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=tmp_base()))
    d.chmod(0o755)
    for rel, spec in files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(spec.data())
        p.chmod(spec.mode)
    return d


def run_oracle(sb: Sandbox, task: Task) -> list[ExecResult]:
    """Run the reference solution: helper files at /solution, each step in the workdir."""
    if task.solution is None:
        raise ClawloopError(f"task {task.id}: has no reference solution")
    env = {**task.env, **harbor_env(task, "solution")}
    host = _write_dir(task.solution.files, "clawloop-solution-") if task.solution.files else None
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


def read_reward(logs: Path) -> tuple[float | None, str | None]:
    """(reward, None) from reward.json (its "reward") or reward.txt; (None, reason) otherwise."""
    pj, pt = logs / "reward.json", logs / "reward.txt"
    if pj.is_file():
        try:
            obj = orjson.loads(pj.read_bytes())
        except orjson.JSONDecodeError:
            return None, "reward.json is not valid JSON"
        val = obj.get("reward") if isinstance(obj, dict) else obj
        if isinstance(val, bool) or not isinstance(val, int | float):
            return None, f"reward.json has no numeric 'reward' ({str(obj)[:60]!r})"
        reward = float(val)
    elif pt.is_file():
        text = pt.read_bytes()[:200].decode("utf-8", errors="replace").strip()
        try:
            reward = float(text)
        except ValueError:
            return None, f"reward.txt is not a number ({text[:60]!r})"
    else:
        return None, "the verifier wrote no reward file"
    if not math.isfinite(reward):
        return None, f"reward is not finite ({reward})"
    return reward, None


def _verdict(logs: Path, r: ExecResult, timeout: float, took: float) -> Verdict:
    if r.timed_out:
        return Verdict("error", None, f"verifier timed out after {timeout:g}s", r.output, took)
    reward, why = read_reward(logs)
    if reward is None:
        return Verdict("error", None, f"{why} (verifier exit status {r.exit_code})", r.output, took)
    return Verdict("passed" if reward >= PASS_THRESHOLD else "failed", reward, None, r.output, took)


def verify(sb: Sandbox, task: Task) -> Verdict:
    """Copy the tests in now, run the entry script on the workspace as left, read the reward."""
    tests = _write_dir(task.verifier.files, "clawloop-tests-")
    logs = Path(tempfile.mkdtemp(prefix="clawloop-logs-", dir=tmp_base()))
    logs.chmod(0o777)
    t0 = time.monotonic()
    mounted: list[str] = []
    try:
        sb.mount(tests, "/tests", writable=True)
        mounted.append("/tests")
        sb.mount(logs, "/logs/verifier", writable=True)
        mounted.append("/logs/verifier")
        r = sb.exec(f"bash /tests/{shlex.quote(task.verifier.entry)}", timeout=task.limits.verifier_timeout_s,
                    cwd=task.workdir, env={**task.env, **harbor_env(task, "verifier")})
        for target in reversed(mounted):  # a copying backend brings the logs back here
            sb.unmount(target)
        mounted.clear()
        return _verdict(logs, r, task.limits.verifier_timeout_s, time.monotonic() - t0)
    finally:
        for target in reversed(mounted):
            with contextlib.suppress(SandboxError, OSError):
                sb.unmount(target)
        shutil.rmtree(tests, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)


# ------------------------------------------------------------------ trusted fast path (validation)
@dataclass(frozen=True)
class OracleCheck:
    """Verdicts of one scripted run: the no-op's (when asked) and the oracle's."""

    oracle: Verdict
    noop: Verdict | None = None


def _exports(env: dict[str, str]) -> str:
    return "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items() if k.isidentifier())


def check_oracle(sb: Sandbox, task: Task, *, noop_first: bool = False) -> OracleCheck:
    """Files, setup, [no-op verdict,] oracle and verdict in ONE exec — for validation only.

    The oracle is trusted, so /tests and /solution are mounted from the start; /logs/verifier
    is fresh for the no-op verdict and emptied again before the oracle runs. Raises
    TaskSetupError when the setup fails. Same verdict rules as `verify`.
    """
    if task.solution is None:
        raise ClawloopError(f"task {task.id}: has no reference solution")
    try:
        for path, spec in task.files.items():
            sb.write_file(path, spec.data(), spec.mode)
    except (SandboxError, OSError) as e:
        raise TaskSetupError(f"task {task.id}: cannot write its files ({e})") from None
    wd, h = shlex.quote(task.workdir), "/logs/clawloop"
    lines = [f"mkdir -p {wd} && cd {wd} || {{ echo 'workdir' > {h}/failed; exit {_SETUP_FAILED}; }}"]
    for i, cmd in enumerate(task.setup, 1):
        lines.append(f"(\n{cmd}\n) >> {h}/setup.out 2>&1 || {{ echo \"setup command {i} failed with status $?\" "
                     f"> {h}/failed; exit {_SETUP_FAILED}; }}")
    test = f"cd {wd} && {_exports(harbor_env(task, 'verifier'))}bash /tests/{shlex.quote(task.verifier.entry)}"
    if noop_first:
        lines += ["echo noop > " + h + "/phase", f"( {test} ) > {h}/noop.out 2>&1; echo $? > {h}/noop.status",
                  f"mkdir -p {h}/noop && cp -a /logs/verifier/. {h}/noop/ && find /logs/verifier -mindepth 1 -delete"]
    lines.append(f"echo oracle > {h}/phase")
    sol_env = _exports(harbor_env(task, "solution"))
    lines += [f"( cd {wd} && {sol_env}\n{step}\n) >> {h}/oracle.out 2>&1" for step in task.solution.steps]
    lines += [f"echo verify > {h}/phase", f"( {test} )"]
    lim = task.limits
    timeout = lim.agent_timeout_s + lim.verifier_timeout_s * (2 if noop_first else 1) + \
        (max(SETUP_TIMEOUT_S, lim.command_timeout_s) if task.setup else 0)
    dirs = {"/logs/verifier": Path(tempfile.mkdtemp(prefix="clawloop-logs-", dir=tmp_base())),
            h: Path(tempfile.mkdtemp(prefix="clawloop-harness-", dir=tmp_base())),
            "/tests": _write_dir(task.verifier.files, "clawloop-tests-")}
    if task.solution.files:
        dirs["/solution"] = _write_dir(task.solution.files, "clawloop-solution-")
    mounted: list[str] = []
    t0 = time.monotonic()
    try:
        for target, host in dirs.items():
            host.chmod(0o777)
            try:
                sb.mount(host, target, writable=True)
            except SandboxError:
                if target != "/solution":
                    raise
                for rel, spec in task.solution.files.items():  # a backend that cannot mount there
                    sb.write_file(f"/solution/{rel}", spec.data(), spec.mode)
                continue
            mounted.append(target)
        r = sb.exec("\n".join(lines), timeout=timeout, cwd="/", env=dict(task.env))
        while mounted:
            sb.unmount(mounted.pop())
        took = time.monotonic() - t0
        hd = dirs[h]
        if (hd / "failed").exists():
            out = (hd / "setup.out").read_bytes()[-2000:].decode(errors="replace") if (hd / "setup.out").exists() else ""
            last = out.strip().splitlines()[-1:] or [""]
            raise TaskSetupError(f"task {task.id}: setup failed ({(hd / 'failed').read_text().strip()}) "
                                 f"{last[0][:200]}".rstrip(), out)
        phase = (hd / "phase").read_text().strip() if (hd / "phase").exists() else ""
        noop = None
        if noop_first:
            nout = (hd / "noop.out").read_bytes()[-sb.config.output_limit:].decode(errors="replace") \
                if (hd / "noop.out").exists() else ""
            status = (hd / "noop.status").read_text().strip() if (hd / "noop.status").exists() else ""
            nr = ExecResult(int(status) if status.isdigit() else -1, nout, r.timed_out and phase == "noop", 0.0)
            noop = _verdict(hd / "noop", nr, lim.verifier_timeout_s, 0.0)
        if r.timed_out and phase in ("noop", "oracle"):
            why = "the no-op's verifier" if phase == "noop" else "the oracle"
            return OracleCheck(Verdict("error", None, f"{why} timed out (budget {timeout:g}s)", r.output, took), noop)
        return OracleCheck(_verdict(dirs["/logs/verifier"], r, lim.verifier_timeout_s, took), noop)
    finally:
        for target in reversed(mounted):
            with contextlib.suppress(SandboxError, OSError):
                sb.unmount(target)
        for host in dirs.values():
            shutil.rmtree(host, ignore_errors=True)


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


def open_sandbox(backend: str, config: SandboxConfig | None = None) -> Any:
    """`sandbox.open(backend, config)` as a context manager; None means `default_config()`."""
    import sandbox

    return sandbox.open(backend=backend, config=config or default_config())


def skip_reason(task: Task, backend: str) -> str | None:
    """Why the task cannot run on this backend (it needs its Docker image), or None."""
    if task.needs_image and backend != "docker":
        return f"needs its Docker image: {task.needs_image}"
    return None


def run_episode(task: Task, agent: str | SimpleAgent = "oracle", backend: str = "bwrap",
                config: SandboxConfig | None = None, *, suite: str | None = None,
                name: str | None = None) -> EpisodeRecord:
    """Open a sandbox, prepare, let the agent act, verify, close. Never raises for task trouble."""
    agent_name = agent if isinstance(agent, str) else getattr(agent, "__name__", "agent")
    fn = SIMPLE_AGENTS.get(agent) if isinstance(agent, str) else agent
    if fn is None:
        raise ClawloopError(f"--agent: unknown simple agent {agent!r} (known: {', '.join(SIMPLE_AGENTS)})")
    rec = EpisodeRecord(task.id, name or task.id, suite or task.source, task.skill, task.level, agent_name,
                        "skipped")
    rec.reason = skip_reason(task, backend)
    if rec.reason is None and fn is run_oracle and task.solution is None:
        rec.reason = "no reference solution"
    if rec.reason:
        return rec
    t0 = time.monotonic()
    try:
        with open_sandbox(backend, config) as sb:
            prepare(sb, task)
            commands = task.solution.steps if fn is run_oracle and task.solution else []
            results = fn(sb, task)
            rec.steps = [Step(c, r.exit_code, r.output, r.timed_out, r.duration_s)
                         for c, r in zip(commands or ["?"] * len(results), results, strict=False)]
            v = verify(sb, task)
        rec.outcome, rec.reward, rec.reason, rec.verifier_output = v.outcome, v.reward, v.reason, v.output
    except (ClawloopError, SandboxError, OSError) as e:
        rec.outcome, rec.reason = "error", str(e)
    rec.duration_s = time.monotonic() - t0
    return rec
