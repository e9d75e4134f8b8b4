"""How a command gets into a bwrap sandbox's container: the bwrap argv for the current mount
set, the exec server (pid 1 of a long-lived container) or a one-shot container per command, and
the cleanup of both at close.

A mixin of BwrapSandbox (sandbox/bwrap.py), which builds the root, the mount set (`_view`) and
the host identity these methods read; apart so that the layout of the sandbox and the running of
processes in it can be read (and changed) one without the other.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from sandbox._execserver import ExecServer, Gone
from sandbox._host import HostIdentity
from sandbox._limits import Cgroup, unmount_tmpfs
from sandbox._paths import FileView, rmtree_force
from sandbox._pid1 import Launch, PidOne
from sandbox._proc import run_captured
from sandbox.base import ExecResult, SandboxConfig, SandboxError

_SETPRIV = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")
SHM_MB = 64
"""Size of /dev/shm (docker's default), within disk_mb."""
DISK = "disk"
"""The state dir's subdir holding every file of the sandbox, under its disk quota (a tmpfs)."""


class BwrapContainers:
    """Runs commands of a BwrapSandbox: in its exec server, or in one-shot containers."""

    oneshot_commands = 1
    """Commands per mount set run in a one-shot container before the exec server starts. The
    first is often the only one (a verifier after mount(), a validation run), and a container
    with bash alone starts faster than one with the server; from the second on the server pays
    off (a command through it costs a fraction of a container start; figures in
    benchmarks/perf/README.md). 0: always the server."""

    # Set up by BwrapSandbox.__init__ and _setup.
    config: SandboxConfig
    root: Path
    state_dir: Path
    _bwrap: str
    _ident: HostIdentity
    _no_nested_userns: list[str]
    _sized_tmpfs: bool
    _view: FileView
    _python: str
    _servers: list[ExecServer]
    _oneshot_argv: list[str] | None
    _oneshots: int
    _cgroups: list[Cgroup]
    _trusted: Path | None
    _carried: list[str]
    _etc_frozen: Path | None
    _etc_verifier: Path | None
    _etc: Path

    def _bwrap_argv(self, launch: Launch | None, *rest: str) -> list[str]:
        """setpriv + bwrap + `launch`'s options + the current mount set + `rest` (options, then
        the command)."""
        a = [self._bwrap, *(launch.args() if launch else ()), "--unshare-all", "--unshare-user",
             "--uid", "0", "--gid", "0", *self._no_nested_userns, "--new-session", "--hostname", "sandbox"]
        if self._trusted is None:
            a += ["--bind", str(self.root), "/"]
        else:  # read-only, with the agent's top-level dirs over it (sandbox/_trusted.py)
            a += ["--ro-bind", str(self._trusted), "/", "--ro-bind", str(self._etc_verifier or self._etc_frozen or self._etc), "/etc"]
            for name in self._carried:
                if "/" + name not in self._view.mounts:
                    a += ["--bind", str(self.root / name), "/" + name]
        a += ["--proc", "/proc", "--dev", "/dev"]
        # /dev read-only but for a sized /dev/shm: bwrap's /dev is a tmpfs without a size.
        if self._sized_tmpfs:
            a += ["--perms", "1777", "--size", str(min(SHM_MB, self.config.disk_mb) << 20)]
        a += ["--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
        # Parents before children: /opt before the runtime in /opt, /logs before /logs/verifier.
        for m in sorted(self._view.mounts.values(), key=lambda m: m.target.count("/")):
            if m.host is not None:
                a += ["--bind" if m.writable else "--ro-bind", str(m.host), m.target]
        a += [*rest]
        if self._ident.run_as and _SETPRIV:
            # An exec of setpriv is cheaper than Popen(user=...), which cannot use vfork and so
            # copies the page tables of this (possibly large) process.
            uid, gid = (str(x) for x in self._ident.run_as)
            a = [_SETPRIV, "--reuid", uid, "--regid", gid, "--clear-groups", *a]
        return a

    def _popen_kw(self) -> dict[str, object]:
        if self._ident.run_as and not _SETPRIV:
            uid, gid = self._ident.run_as
            return {"user": uid, "group": gid, "extra_groups": []}
        return {}

    def _run(self, script: str, cwd: str, env: dict[str, str], timeout: float,
             oneshot: bool = True) -> ExecResult:
        """Run in the exec server's container (started when needed), or in a one-shot container
        for the first `oneshot_commands` commands since open() or the last mount change
        (`oneshot` False: never, e.g. a script too long for bash's argv)."""
        # --as-pid-1: the server is pid 1, which commands cannot signal; no --die-with-parent:
        # bwrap would die with the host *thread* that started it, and the server ends anyway
        # when this process closes its socket or dies.
        server = ("--as-pid-1", "--chdir", "/", "--clearenv", self._python)
        key = self._bwrap_argv(None, *server)
        if self._servers and (self._servers[0].key != key or not self._servers[0].alive()):
            self._servers.pop().stop()
        if not self._servers:
            if self._oneshot_argv != key:
                self._oneshot_argv, self._oneshots = key, 0
            # A trusted root's commands judge the agent (verifiers): always through the server,
            # the pid 1 that tells a bash killed by a signal from one that exited 128+N, and
            # counts what it left running (a one-shot container's bwrap init cannot).
            if oneshot and self._oneshots < self.oneshot_commands and self._trusted is None:
                self._oneshots += 1
                return self._run_oneshot(script, cwd, env, timeout)
        for attempt in (1, 2):
            if not self._servers:
                launch = Launch(self._cgroup())
                self._servers.append(ExecServer(self._bwrap_argv(launch, *server), key=key,
                                                launch=launch, log=self.state_dir / "server.log",
                                                popen_kw=self._popen_kw()))
            try:
                return self._servers[0].run(script, cwd, env, timeout, self.config.output_limit)
            except Gone:  # found dead before the command was sent: once more in a new one
                self._servers.pop().stop()
                if attempt == 2:
                    raise SandboxError("the sandbox's exec server died twice in a row") from None
        raise AssertionError("unreachable")

    def _run_oneshot(self, script: str, cwd: str, env: dict[str, str], timeout: float) -> ExecResult:
        """A container for one command, as before the server existed. Its pid 1 is bwrap's own
        init, which the command can ptrace (same uid, dumpable) and keep alive past bwrap: the
        host kills it, and so the whole pid namespace, as soon as bwrap exits or times out."""
        setenv = [x for k, v in env.items() for x in ("--setenv", k, v)]
        launch = Launch(self._cgroup())
        argv = self._bwrap_argv(launch, "--die-with-parent", "--chdir", cwd, "--clearenv", *setenv,
                                "bash", "-c", script)
        held: list[PidOne | None] = [None]

        def hold(proc: subprocess.Popen[bytes]) -> None:
            held[0] = launch.hold(proc)

        def end(_: object = None) -> None:  # bwrap exited, timed out, or we are done
            if held[0] is not None and not held[0].kill() and self._cgroups:
                self._cgroups[0].kill()  # pid 1 would not die: every process of the sandbox

        def kill(proc: subprocess.Popen[bytes]) -> None:
            proc.kill()
            end(proc)

        # bwrap gets an empty environment: under --unshare-pid its init process keeps bwrap's
        # environment, which the sandbox can read in /proc/1/environ.
        try:
            return run_captured(argv, timeout=timeout, output_limit=self.config.output_limit,
                                env={}, cwd="/", pass_fds=launch.pass_fds, started=hold,
                                after_exit=end, kill=kill, **self._popen_kw())
        finally:
            launch.close()
            end()

    def _cgroup(self) -> Cgroup | None:
        return self._cgroups[0] if self._cgroups else None


def cleanup(servers: list[ExecServer], state_dir: Path, cgroups: list[Cgroup]) -> None:
    """Stop the server, kill whatever is left in the cgroup, free the tmpfs, delete the rest.
    Each step runs even if one before failed (this runs at close, collection or exit)."""
    try:
        while servers:
            servers.pop().stop()
    finally:
        try:
            for cg in cgroups:
                cg.kill()
        finally:
            unmount_tmpfs(state_dir / DISK)
            rmtree_force(state_dir)
            while cgroups:
                cgroups.pop().remove()
