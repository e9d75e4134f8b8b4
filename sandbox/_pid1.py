"""The host's hold on a bwrap container's pid 1, and so on its whole pid namespace.

When pid 1 of a pid namespace dies, the kernel kills every other process in it. bwrap ties pid 1
to itself with a parent-death signal, but pid 1 runs as the sandbox's uid: in a one-shot
container it is bwrap's own init, dumpable, and a command could ptrace it and clear that signal
(`prctl(PR_SET_PDEATHSIG, 0)`); the namespace, and a daemon in it, then outlived bwrap. So the
host holds pid 1 itself: bwrap is started with `--info-fd` (it reports pid 1's host pid) and
`--block-fd` (pid 1 waits there once the mounts are set up, before it starts any process; the
similar `--userns-block-fd` cannot go with `--disable-userns`); meanwhile the host opens a pidfd
on it and moves it into the sandbox's cgroup, then lets it go on. After a one-shot command, and when an exec server stops, the host SIGKILLs
pid 1 through the pidfd and waits until it is gone: nothing of the namespace is left by then.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time

from sandbox._limits import Cgroup
from sandbox.base import SandboxError

KILL_WAIT_S = 5.0
"""Longest wait for a killed pid 1 to be gone (its namespace is emptied before it)."""


class PidOne:
    """A container's pid 1 as the host holds it: a pidfd (no pid reuse can mislead a kill)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        try:
            self.fd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:  # bwrap failed and it is gone already
            self.fd = None

    def kill(self, wait: bool = True) -> bool:
        """SIGKILL pid 1, ending its pid namespace; with `wait`, until it is gone (False if it is
        not within KILL_WAIT_S). Once only: the pidfd is closed."""
        if self.fd is None:
            return True
        gone = True
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self.fd, signal.SIGKILL)
        if wait:
            poller = select.poll()
            poller.register(self.fd, select.POLLIN)  # readable once it has exited
            gone = bool(poller.poll(KILL_WAIT_S * 1000))
        os.close(self.fd)
        self.fd = None
        return gone


class Launch:
    """The two pipes of one bwrap start: `args()` go on its command line, `pass_fds` to Popen,
    then `hold(proc)` right after Popen (before anything else waits on the process)."""

    def __init__(self, cgroup: Cgroup | None, timeout: float = 30.0) -> None:
        self.cgroup = cgroup
        self.timeout = timeout
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        self.pass_fds = (info_w, block_r)
        self._info_r: int | None = info_r
        self._info_w: int | None = info_w
        self._block_r: int | None = block_r
        self._block_w: int | None = block_w

    def args(self) -> list[str]:
        return ["--info-fd", str(self.pass_fds[0]), "--block-fd", str(self.pass_fds[1])]

    def close(self) -> None:
        """Close what is still open (after `hold`, or when Popen failed)."""
        for name in ("_info_r", "_info_w", "_block_r", "_block_w"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)

    def hold(self, proc: subprocess.Popen[bytes]) -> PidOne | None:
        """Read pid 1's host pid, take a pidfd on it and move it into the cgroup while it waits,
        then let it go on. None when bwrap failed before it reported one (its own error follows
        in its output). Raises SandboxError, with bwrap killed, when the cgroup refuses it."""
        for fd in self.pass_fds:  # the child's ends: bwrap's EOF must depend on it alone
            os.close(fd)
        self._info_w = self._block_r = None
        try:
            pid = self._read_pid()
            pid1 = PidOne(pid) if pid else None
            if pid1 and self.cgroup:
                try:
                    self.cgroup.add(pid)
                except OSError as e:
                    pid1.kill()
                    proc.kill()
                    raise SandboxError(f"cannot move the sandbox into its cgroup: {e}") from None
            with contextlib.suppress(OSError):  # gone already: its output says why
                os.write(self._block_w, b"1")  # type: ignore[arg-type]
            return pid1
        finally:
            self.close()

    def _read_pid(self) -> int | None:
        """pid 1's host pid from bwrap's info JSON; None at EOF or the timeout."""
        data, end = b"", time.monotonic() + self.timeout
        poller = select.poll()
        assert self._info_r is not None
        poller.register(self._info_r, select.POLLIN)
        while time.monotonic() < end:
            if not poller.poll(max(end - time.monotonic(), 0) * 1000):
                break
            chunk = os.read(self._info_r, 4096)
            if not chunk:
                break
            data += chunk
            try:
                return int(json.loads(data)["child-pid"])
            except (ValueError, KeyError, TypeError):
                continue  # not all of it yet
        return None
