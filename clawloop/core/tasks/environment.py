"""A task running in a sandbox: open → prepare → exec … → verify → close, one per task run.

Every runner drives this class: the lockstep rollouts, GRPO's environments, reference
trajectories, the oracle and no-op agents, hindsight exploration and the validation of pools.

- `prepare` places the task's files and runs its setup (one exec in /, none when there is nothing
  to run); a failure is TaskSetupError (outcome "error").
- `exec` is what agents call: the command runs in the task's workdir with the task's env, and
  (command, result) is kept in `steps` (a scripted agent's transcript).
- `verify` asks the task's format adapter (`clawloop.core.tasks.adapters`, picked when the environment
  is built): the hidden verifier runs in a clean world built only now, after every command of the
  agent ended (`clawloop.core.tasks.verifier`), so nothing the agent wrote under /tests or
  /logs/verifier counts. It may run more than once (validation verifies the no-op, then the oracle).
- `close` discards the sandbox; it is idempotent and runs on leaving a `with` block whatever
  raised. Any use after it is a ClawloopError.
"""

from __future__ import annotations

import shlex
from types import TracebackType
from typing import Any, Self

import sandbox as sandboxes
from clawloop.core.tasks.adapters import FormatAdapter, Transcript, adapter_for
from clawloop.core.tasks.harbor_docker import docker_skip_reason, task_image
from clawloop.core.tasks.layers import attach as attach_layers
from clawloop.core.tasks.layers import layer_skip_reason
from clawloop.core.tasks.shell_lite import default_runtime_dir
from clawloop.core.tasks.task import Task
from clawloop.core.tasks.verifier import Verdict
from clawloop.errors import ClawloopError
from sandbox.base import ExecResult, Sandbox, SandboxConfig, SandboxError

SETUP_TIMEOUT_S = 120.0
SETUP_FAILED = 97
"""Exit status of the setup script when one of its steps failed."""


class TaskSetupError(ClawloopError):
    """The task's files or setup commands could not be put in place (outcome "error")."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


def default_config() -> SandboxConfig:
    """Sandbox defaults with the task runtime (python3 + pytest, pandas, ...) mounted."""
    return SandboxConfig(runtime_dir=default_runtime_dir())


def sandbox_config(config: SandboxConfig | dict[str, Any] | None = None) -> SandboxConfig:
    """The config every episode's sandbox opens with: `config` (or its dict), else `default_config()`."""
    if config is None:
        return default_config()
    return config if isinstance(config, SandboxConfig) else SandboxConfig.model_validate(config)


def refuse_unverifiable(backend: str) -> None:
    """ClawloopError (one line, before any work) when `backend` cannot grade a task: commands that
    verify (eval, validate, rollouts) call it first."""
    why = sandboxes.cannot_verify(backend)
    if why:
        raise ClawloopError(f"--backend {backend}: {why}")


def open_sandbox(backend: str, config: SandboxConfig | dict[str, Any] | None = None) -> Any:
    """A bare sandbox as a context manager (no task: preflight checks); None means `default_config()`."""
    return sandboxes.open(backend=backend, config=sandbox_config(config))


def image_skip_reason(task: Task, backend: str) -> str | None:
    """Why the task cannot run on this backend (it needs its Docker image, or on docker more
    than the image has, or environment layers or uids this host cannot give it), or None.
    Builds the task's missing layers into the cache (sandbox/layers.py)."""
    if backend == "docker":  # judged against the docker image, not the host
        return docker_skip_reason(task)
    if task.needs_image:
        return f"needs its Docker image: {task.needs_image}"
    return layer_skip_reason(task, backend)


def write_files(sb: Sandbox, task: Task) -> None:
    """Place the task's files (TaskSetupError when the sandbox refuses one)."""
    try:
        for path, spec in task.files.items():
            sb.write_file(path, spec.data(), spec.mode)
    except (SandboxError, OSError) as e:
        raise TaskSetupError(f"task {task.id}: cannot write its files ({e})") from None


def prepare(sb: Sandbox, task: Task) -> None:
    """Write the task's files and run its setup (one exec, none when there is nothing to run);
    then /etc as the setup left it is the one every verifier sees (`Sandbox.freeze_etc`)."""
    write_files(sb, task)
    _setup(sb, task)
    try:
        sb.freeze_etc()
    except SandboxError as e:
        raise TaskSetupError(f"task {task.id}: {e}") from None


def _setup(sb: Sandbox, task: Task) -> None:
    lines = []
    if task.workdir != sb.config.workspace:
        lines.append(f"mkdir -p {shlex.quote(task.workdir)} || exit {SETUP_FAILED}")
    if task.setup:
        lines.append(f"cd {shlex.quote(task.workdir)} || exit {SETUP_FAILED}")
        for i, cmd in enumerate(task.setup, 1):
            lines.append(f"(\n{cmd}\n) || {{ s=$?; echo \"[setup command {i} failed with status $s]\"; "
                         f"exit {SETUP_FAILED}; }}")
    if not lines:
        return
    r = sb.exec("\n".join(lines), timeout=max(SETUP_TIMEOUT_S, task.limits.command_timeout_s), cwd="/",
                env=dict(task.env))
    if r.exit_code != 0:
        why = "timed out" if r.timed_out else f"exit status {r.exit_code}"
        last = r.output.strip().splitlines()[-1:] or [""]
        raise TaskSetupError(f"task {task.id}: setup failed ({why}) {last[0][:200]}".rstrip(), r.output)


class TaskEnvironment:
    """One run of `task` in a sandbox of `backend` opened with `config` (None: `default_config()`).

    Use as a context manager (`with TaskEnvironment(task) as env:` opens; leaving closes) or call
    `open` and `close` yourself (`close` in a `finally`). It is the loop's Environment
    (clawloop.core.protocols, which imports this package: hence no import back)."""

    def __init__(self, task: Task, backend: str = "bwrap", config: SandboxConfig | dict[str, Any] | None = None,
                 *, adapter: FormatAdapter | None = None) -> None:
        self.task = task
        self.backend = backend
        self.config = sandbox_config(config)
        self.adapter = adapter or adapter_for(task)
        self.steps: list[tuple[str, ExecResult]] = []
        """(command, result) of every `exec`, in order."""
        self.image: str | None = None
        """The task's own image the sandbox runs (docker, a Harbor task whose base image is here:
        `harbor_docker.task_image`), whose build placed the task's files and ran its setup."""
        self._sb: Sandbox | None = None
        self._closed = False

    # -- lifecycle ----------------------------------------------------------------------------
    def skip_reason(self) -> str | None:
        """Why this task cannot run here (its format's reason, or its Docker image), else None."""
        return self.adapter.skip_reason(self.task) or image_skip_reason(self.task, self.backend)

    def open(self) -> Self:
        """Create the sandbox (once)."""
        if self._closed:
            raise ClawloopError(f"task {self.task.id}: the environment is closed")
        if self._sb is None:
            config = self.config
            if self.backend == "docker" and config.image is None:
                try:
                    self.image = task_image(self.task)
                except ClawloopError as e:  # a failed build is the task's error, not a crash
                    raise TaskSetupError(str(e)) from None
                if self.image is not None:
                    config = config.model_copy(update={"image": self.image})
            self._sb = sandboxes.create(self.backend, config)
            if self.backend != "docker":  # the image has what the layers would add
                self._attach_layers()
        return self

    def _attach_layers(self) -> None:
        """Mount the task's environment layers and uids (clawloop.core.tasks.layers)."""
        try:
            attach_layers(self._sb, self.task)
        except Exception as e:  # a layer that cannot be built or mounted is the task's setup error
            sb, self._sb = self._sb, None
            if sb is not None:
                sb.close()
            raise TaskSetupError(f"task {self.task.id}: cannot attach its layers ({e})") from None

    @property
    def setup_task(self) -> Task:
        """The task as its sandbox still needs it prepared: without its files and setup when the
        sandbox runs the task's own image (the build did both; replaying them would run twice)."""
        if self.image is None:
            return self.task
        return self.task.model_copy(update={"files": {}, "setup": []})

    @property
    def sandbox(self) -> Sandbox:
        """The open sandbox (for mounts and snapshots); a ClawloopError before `open`, after `close`."""
        if self._sb is None:
            state = "closed" if self._closed else "not open"
            raise ClawloopError(f"task {self.task.id}: the environment is {state}")
        return self._sb

    def prepare(self) -> None:
        """Place the task's files and run its setup (TaskSetupError when they fail)."""
        prepare(self.sandbox, self.setup_task)

    def exec(self, command: str, timeout: float | None = None, *, env: dict[str, str] | None = None) -> ExecResult:
        """Run an agent's command in the task's workdir with the task's env (then `env`); the
        timeout defaults to the task's command timeout."""
        sb = self.sandbox
        r = sb.exec(command, timeout=self.task.limits.command_timeout_s if timeout is None else timeout,
                    cwd=self.task.workdir, env={**self.task.env, **(env or {})} or None)
        self.steps.append((command, r))
        return r

    def verify(self, messages: Transcript | None = None) -> Verdict:
        """The verdict on the workspace as the agent left it. `messages`: the episode's conversation
        (graders that read it); None for scripted agents, whose `steps` stand in for it."""
        return self.adapter.verify(self.sandbox, self.task, messages, self.steps)

    def close(self) -> None:
        """Discard the sandbox (idempotent)."""
        self._closed = True
        sb, self._sb = self._sb, None
        if sb is not None:
            sb.close()

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
