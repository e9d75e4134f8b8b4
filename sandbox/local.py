"""The `local` backend: a plain subprocess in a temp dir. NOT isolated.

For trusted tasks and debugging only. Commands run as the calling user with full access to the
host's files, network and processes. What it does emulate:

- sandbox paths: `write_file`, `read_file` and `mount` map an absolute sandbox path `/p` to
  `<temp root>/p` (mounts appear as symlinks there). A command, however, sees the host's real
  filesystem: a literal `/workspace/x` in a command is the host's `/workspace/x`. The cwd is the
  emulated workspace and `HOME`, `TMPDIR` and `SANDBOX_ROOT` point into the temp root, so
  commands that use relative paths, `~` or `$SANDBOX_ROOT/...` behave as in a real sandbox.
- the environment is built from scratch as in the isolated backends (the host PATH is used,
  with the runtime's bin first).
- limits: RLIMIT_AS/FSIZE/CPU are set per command; RLIMIT_NPROC too, but it counts every
  process of the calling user and is not enforced for root.
- timeout: the command runs in a new process group that is killed at the timeout and after the
  command ends. A grandchild that calls `setsid` escapes it (no pid namespace).

What it refuses: a verifier (`trusted_root`). A verifier's world is a fresh /tests, /logs and
/tmp of its own, with the temp dirs cleaned of the agent's links; here those paths are the host's,
so its test.sh could not find its tests and its clean-up would delete the host's links (every
symlink under /tmp and /var/tmp, found 2026-12-07). Nothing this backend runs deletes or changes
a host file it did not make, so it grades nothing: `CANNOT_VERIFY`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import weakref
from pathlib import Path
from typing import NoReturn

from sandbox._layout import LONG_COMMAND, WRITABLE_TOPS, Backend, shell_script
from sandbox._paths import FileView, Mount, mount_source, rmtree_force, sandbox_path, state_prefix
from sandbox._proc import run_captured
from sandbox.base import ExecResult, SandboxConfig, SandboxError

CANNOT_VERIFY = ("the local backend runs commands on the host, where /tests, /logs and /tmp are the host's own: "
                 "it cannot grade a task (use --backend bwrap or docker)")
"""Why a verifier never runs here; what `trusted_root` raises and the commands that grade say."""


class LocalSandbox(Backend):
    """Commands as plain subprocesses of the host, files under a temp root. Not isolated."""

    backend = "local"
    process_limit_enforced = False

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        self.state_dir = Path(tempfile.mkdtemp(prefix=state_prefix("local")))
        self._finalizer = weakref.finalize(self, rmtree_force, self.state_dir)
        self.root = self.state_dir / "root"
        for top in WRITABLE_TOPS:
            (self.root / top).mkdir(parents=True, exist_ok=True)
        (self.root / "home" / "user").mkdir(parents=True, exist_ok=True)
        self._view = FileView(self.root)
        self._ws_host = self.root / self._workspace.lstrip("/")
        self._ws_host.mkdir(parents=True, exist_ok=True)
        if config.seed_dir is not None:
            if not Path(config.seed_dir).is_dir():
                self.close()
                raise SandboxError(f"seed_dir {config.seed_dir}: not a directory")
            shutil.copytree(config.seed_dir, self._ws_host, symlinks=True, dirs_exist_ok=True)

    def _host_cwd(self, cwd: str | None) -> str:
        _, host, _ = self._view.resolve(cwd or self._workspace)
        if host is None or not host.is_dir():
            raise SandboxError(f"cwd {cwd}: no such directory in the sandbox")
        return str(host)

    def exec(self, command: str, timeout: float = 60.0, *, cwd: str | None = None,
             env: dict[str, str] | None = None) -> ExecResult:
        """Run `command` with `bash -c` in its own process group, killed at `timeout`."""
        with self._lock:
            if self._closed:
                raise SandboxError("sandbox is closed")
            host_path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
            if self._runtime:
                host_path = f"{self._runtime / 'bin'}:{host_path}"
            full_env = {"PATH": host_path, "HOME": str(self.root / "root"), "LANG": "C.UTF-8",
                        "TERM": "dumb", "TMPDIR": str(self.root / "tmp"),
                        "SANDBOX_ROOT": str(self.root), **self.config.env, **(env or {})}
            # Without a pid namespace a finished command's background children would live on:
            # kill its process group once it ends, and at the timeout.
            cmd_file = None
            if len(command.encode()) > LONG_COMMAND:
                cmd_file = str(self.state_dir / "command.sh")
                Path(cmd_file).write_text(command)
            return run_captured(
                ["bash", "-c", shell_script(self.config, command, cmd_file)], timeout=timeout,
                output_limit=self.config.output_limit, env=full_env, cwd=self._host_cwd(cwd),
                start_new_session=True, kill=_kill_group, after_exit=_kill_group)

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        with self._lock:
            self._view.write(path, data, mode)

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        with self._lock:
            return self._view.read(path, max_bytes)

    def mount(self, host_path: Path, target: str, *, writable: bool = False) -> None:
        """Map `target` to the host dir (a symlink in the temp root). Read-only is not enforced
        for commands, only for `write_file`."""
        with self._lock:
            host = mount_source(host_path)
            t = sandbox_path(target)
            if t.strip("/") in WRITABLE_TOPS:  # commands see the host's /tmp...: nothing to replace
                raise SandboxError(f"mount target {target}: the local backend's commands see the host's")
            link = self.root / t.lstrip("/")
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink():
                link.unlink()
            elif link.exists():
                rmtree_force(link)
            link.symlink_to(host, target_is_directory=True)
            self._view.add(Mount(t, host, writable))

    def unmount(self, target: str) -> None:
        with self._lock:
            m = self._view.remove(target)
            link = self.root / sandbox_path(target).lstrip("/")
            if m is not None and link.is_symlink():
                link.unlink()

    def trusted_root(self) -> NoReturn:
        """Refused: a verifier here would run on the host (`CANNOT_VERIFY`)."""
        raise SandboxError(CANNOT_VERIFY)

    def close(self) -> None:
        self._closed = True
        self._finalizer()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
