"""The sandbox contract shared by every backend.

A sandbox is an isolated filesystem with a writable workspace (default `/workspace`) in which
commands run one at a time. Files persist between commands of one sandbox; processes do not
outlive the command that started them, nor `close()`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class SandboxError(Exception):
    """The sandbox cannot be created or used (missing binary, bad path, refused file)."""


class SandboxConfig(BaseModel):
    """Limits and layout of one sandbox; every backend honours these fields."""

    model_config = ConfigDict(extra="forbid")

    workspace: str = "/workspace"
    """Absolute path of the writable workspace inside the sandbox (also the default cwd)."""
    memory_mb: int = Field(2048, gt=0)
    """Memory limit in MiB: of each process (address space, RLIMIT_AS), and of the whole sandbox
    (its processes with the files they write to RAM-backed dirs) where the backend can: docker,
    bwrap with a cgroup (its `limits` says)."""
    max_processes: int = Field(256, gt=0)
    """Most processes (threads count) a command may have alive at once (the whole sandbox's
    where a cgroup counts them)."""
    max_file_size_mb: int = Field(256, gt=0)
    """Largest file a command may write, in MiB (RLIMIT_FSIZE)."""
    disk_mb: int = Field(1024, gt=0)
    """Most MiB all files of the sandbox's private dirs may take together (workspace, /tmp,
    /root, ...) where the backend can: bwrap as root (a tmpfs; `limits` says); docker sizes each
    of its tmpfs dirs so."""
    cpu_seconds: int = Field(600, gt=0)
    """CPU time limit per command (RLIMIT_CPU), in seconds."""
    output_limit: int = Field(16_384, gt=0)
    """Most characters of output kept per command; beyond it the middle is cut (head + tail)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables inside the sandbox (nothing of the host's leaks in)."""
    runtime_dir: Path | None = None
    """Host directory of the task runtime (a python venv), mounted read-only and put on PATH."""
    seed_dir: Path | None = None
    """Host directory whose contents are copied into the workspace at open."""
    image: str | None = None
    """Image the `docker` backend runs (None: $CLAWLOOP_DOCKER_IMAGE, else clawloop-sandbox:latest),
    e.g. a task's own built by `sandbox.docker_build`; bwrap and local have no image and ignore it."""


@dataclass(frozen=True)
class ExecResult:
    """What one command did."""

    exit_code: int
    """Exit status; 124 when the command timed out, 128+N when killed by signal N."""
    output: str
    """stdout and stderr interleaved, decoded with replacement, truncated head + tail."""
    timed_out: bool
    duration_s: float
    truncated: bool = False
    """True when output was cut to `output_limit`."""
    signal: int | None = None
    """The signal that ended the command's top process (its bash, or what it exec'd): 0 when it
    exited on its own; None where the backend cannot tell (exit status 128+N is also what
    `exit 128+N` gives)."""
    leftovers: int | None = None
    """Processes still running when the top process ended (all killed before `exec` returned);
    None where the backend cannot tell."""


@runtime_checkable
class Sandbox(Protocol):
    """An isolated filesystem where commands run. Use through `sandbox.open(...)`."""

    config: SandboxConfig

    def exec(self, command: str, timeout: float = 60.0, *, cwd: str | None = None,
             env: dict[str, str] | None = None) -> ExecResult:
        """Run `command` with `bash -c` inside the sandbox; kill its whole tree at `timeout`."""
        ...

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Create or replace the file at absolute `path` inside the sandbox (parents created)."""
        ...

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """Read a file inside the sandbox; refuses symlinks that resolve outside the sandbox."""
        ...

    def mount(self, host_path: Path, target: str, *, writable: bool = False) -> None:
        """Make a host directory appear at absolute `target` for the following commands."""
        ...

    def unmount(self, target: str) -> None:
        """Remove a mount added with `mount`."""
        ...

    def scratch_dir(self, prefix: str) -> Path:
        """A new empty host dir inside the sandbox's own storage (within its disk quota where it
        has one), for what the host mounts in (tests, reward logs); deleted at close at the latest.
        No command of the sandbox can reach it unless it is mounted."""
        ...

    def trusted_root(self) -> AbstractContextManager[None]:
        """Commands inside this block run on a system no earlier command could program: the root
        and its /bin /lib /lib64 /sbin links are the sandbox's originals and /etc is as of the last
        `freeze_etc`, all read-only; the data earlier commands left (every other top-level dir) is
        carried over. For verifiers. A backend whose system is read-only for commands anyway
        (docker's image) runs the block as it is."""
        ...

    def freeze_etc(self) -> None:
        """Take /etc as it is now (the image as built: the sandbox's own, its layers' and what the
        task's setup wrote) as the /etc of every later `trusted_root` block, read-only, whatever
        later commands change there: the verifier's tools (file, pip, git, service, openssl,
        ld.so...) read their configuration from the image, never from the agent. Before the first
        call a trusted root shows the /etc the sandbox opened with. No-op where commands cannot
        change /etc."""
        ...

    def close(self) -> None:
        """Kill anything still running and delete the sandbox's files. Idempotent."""
        ...


class ClosedOnExit:
    """The `with` protocol of every backend: leaving the block closes the sandbox."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def truncate_output(data: bytes, limit: int) -> tuple[str, bool]:
    """Decode bytes safely and keep the head and tail when longer than `limit` characters."""
    text = data.decode("utf-8", errors="replace")
    if len(text) <= limit:
        return text, False
    head = limit // 2
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}", True
