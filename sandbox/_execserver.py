"""Host side of the exec server (sandbox/_server.py): start it in a container, run commands in it.

One long-lived container per sandbox saves the container start (namespaces, mounts) on every
command; the server kills whatever a command leaves behind before it answers, so commands stay
as separate as before. The output comes through a pipe per command whose write
end the server hands to the command: the host reads it as before (head + tail, flat memory).
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandbox._pid1 import Launch, PidOne
from sandbox._proc import HeadTail, open_to_sandbox_uid, read_chunk
from sandbox.base import ExecResult, SandboxError

START_TIMEOUT_S = 30.0
"""Longest wait for a starting server's `ready` (a loaded machine can take seconds)."""
REPLY_GRACE_S = 15.0
"""After the command's timeout, how long the server may take to kill everything and answer
(it gives up itself after 5 s) before the host kills the whole container."""
_BOOT = "import sys;exec(sys.stdin.buffer.read())"
"""The interpreter's whole command line: the server's source (and its socket's fd number) comes
on stdin, so `ps` inside shows the same short line in every sandbox."""
_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")


@functools.cache
def server_source() -> bytes:
    return Path(__file__).with_name("_server.py").read_bytes()


def find_python(runtime: Path | None, runtime_mount: str) -> str:
    """An interpreter for the server that the container can see: the system's under /usr (bound
    read-only), else the task runtime's when it is a real interpreter inside the runtime."""
    for p in _PYTHONS:
        if os.access(p, os.X_OK):
            return p
    if runtime is not None:
        real = (runtime / "bin" / "python3").resolve()
        if real.is_file() and real.is_relative_to(runtime.resolve()):
            return f"{runtime_mount}/{real.relative_to(runtime.resolve())}"
        if real.is_file() and real.is_relative_to("/usr"):
            return str(real)
    raise SandboxError("the bwrap backend needs python3 under /usr (or in the task runtime) "
                       "to run its exec server: install python3")


class ExecServer:
    """One running container with its exec server; `run` one command at a time (not thread-safe:
    the sandbox's lock serialises)."""

    def __init__(self, argv: Sequence[str], *, key: Sequence[str], launch: Launch, log: Path,
                 popen_kw: dict[str, Any]) -> None:
        """`argv` starts bwrap with `launch`'s options; `key` is the same without them (what a
        sandbox compares to know whether its mounts changed)."""
        self.key = list(key)
        self.dead = False
        self.log = log
        self.pid1: PidOne | None = None
        self._buf = b""
        host_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = host_end
        fd = server_end.fileno()
        try:
            with open(log, "wb") as err:
                # bwrap gets an empty environment: under --unshare-pid its own process keeps it,
                # readable inside; --as-pid-1 makes the server pid 1, where commands cannot
                # signal it.
                self.proc = subprocess.Popen(
                    [*argv, "-I", "-S", "-c", _BOOT],
                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err,
                    pass_fds=(server_end.fileno(), *launch.pass_fds), env={}, cwd="/", **popen_kw)
        except (OSError, ValueError) as e:
            host_end.close()
            launch.close()
            raise SandboxError(f"cannot start bwrap: {e}") from None
        finally:
            server_end.close()
        try:
            self.pid1 = launch.hold(self.proc)
            assert self.proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):  # died at once: the log says why
                self.proc.stdin.write(server_source().replace(b"\nSOCKET_FD = -1\n", b"\nSOCKET_FD = %d\n" % fd, 1))
                self.proc.stdin.close()
            line = self._read_line(time.monotonic() + START_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise
        if line != b"ready":
            why = self._why(line)
            self.stop()
            raise SandboxError(f"the sandbox's exec server did not start: {why}")

    def _why(self, line: bytes | None) -> str:
        try:
            text = self.log.read_text(errors="replace").strip()
        except OSError:
            text = ""
        if not text:
            if line is not None:
                text = f"unexpected answer {line[:200]!r}"
            else:
                try:
                    text = f"bwrap exited with status {self.proc.wait(1.0)}"
                except subprocess.TimeoutExpired:
                    text = f"no answer within {START_TIMEOUT_S:g} s"
        return text[-2000:]

    def _read_line(self, deadline: float) -> bytes | None:
        """The next line from the server without its newline; None at EOF or the deadline."""
        poller = select.poll()  # not select(): this process may have fds above 1024
        poller.register(self.sock, select.POLLIN)
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(min(left, 3600.0) * 1000):
                return None
            data = self.sock.recv(4096)
            if not data:
                return None
            self._buf += data
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def run(self, script: str, cwd: str, env: dict[str, str], timeout: float, output_limit: int) -> ExecResult:
        """Run one `bash -c script`; at `timeout` the server kills it and everything it started.

        Raises `Gone` when the server turns out dead before the command was sent (the caller
        starts a new one and retries); reports 137 when it dies during the command.
        """
        start = time.monotonic()
        timeout = float(timeout) if timeout >= 0 else 0.0  # NaN and negatives: no time at all
        fields = [repr(timeout), cwd, script, *(f"{k}={v}" for k, v in env.items())]
        payload = b"\0".join(f.encode("utf-8", "surrogateescape") for f in fields)
        msg = len(payload).to_bytes(4, "big") + payload
        r, w = os.pipe()  # both ends close-on-exec: no other child of this process inherits them
        open_to_sandbox_uid(w)
        try:
            try:
                sent = socket.send_fds(self.sock, [msg], [w])
                if sent < len(msg):
                    self.sock.sendall(msg[sent:])
            except OSError as e:
                self.stop()
                raise Gone(str(e)) from None
        finally:
            os.close(w)  # from now on only the command's processes hold the write end
        buf = HeadTail(output_limit)
        reply: bytes | None = None
        eof = done = False  # done: the server answered, or is gone
        deadline = start + max(timeout, 0) + REPLY_GRACE_S
        drain_until: float | None = None  # after `done`, stop waiting for EOF then
        poller = select.poll()
        poller.register(r, select.POLLIN)
        poller.register(self.sock, select.POLLIN)
        try:
            while not (eof and done):
                now = time.monotonic()
                if not done and now >= deadline:
                    poller.unregister(self.sock)
                    self.stop()  # the server stopped answering: end the whole container
                    done, drain_until = True, now + 2.0
                if drain_until is not None and now >= drain_until:
                    break
                until = drain_until if drain_until is not None else deadline
                for fd, _ in poller.poll(min(max(until - now, 0), 3600.0) * 1000):
                    if fd == r:
                        eof = read_chunk(r, buf, poller)
                        continue
                    data = self.sock.recv(4096)
                    self._buf += data
                    if b"\n" in self._buf:
                        reply, self._buf = self._buf.split(b"\n", 1)
                    if reply is not None or not data:  # answered, or died (killed, OOM)
                        done = True
                        poller.unregister(self.sock)
                        drain_until = time.monotonic() + (2.0 if reply is None else 0.5)
        except BaseException:
            self.stop()
            raise
        finally:
            os.close(r)
        output, truncated = buf.result()
        took = time.monotonic() - start
        if reply is None:
            self.stop()
            timed_out = took >= timeout
            return ExecResult(124 if timed_out else 137, output, timed_out, took, truncated)
        _, status, timed_out, clean, sig, left = reply.split()
        if clean != b"1":  # something in the namespace would not die: end the container
            self.stop()
        if timed_out == b"1":
            return ExecResult(124, output, True, took, truncated, leftovers=int(left))
        return ExecResult(int(status), output, False, took, truncated, signal=int(sig), leftovers=int(left))

    def stop(self) -> None:
        """End the container now: its pid 1, the server, is killed (and bwrap), and the kernel
        kills what is left of the pid namespace with it.

        Not waiting for the server's own exit makes every close faster; between commands there
        is nothing else in the namespace anyway (the sandbox's close waits on its cgroup)."""
        self.dead = True
        self.sock.close()
        if self.pid1 is not None:
            self.pid1.kill(wait=False)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()


class Gone(Exception):
    """The server was found dead before a command was sent: start a new one and retry."""
