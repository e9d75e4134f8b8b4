"""Run one host process with a deadline and bounded output capture (shared by bwrap and local)."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any

from sandbox.base import ExecResult, SandboxError, truncate_output

_CHUNK = 1 << 16


class HeadTail:
    """Keeps the first and last bytes of a stream, so a 100 MB flood costs a few KiB of memory.

    `limit` is in characters (ExecResult's unit); up to 4 bytes per character are kept on each
    side, so UTF-8 text is never cut short before truncate_output counts characters.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.keep = 4 * limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.keep:
                # Trim in batches: amortised O(1) per byte instead of a copy per chunk.
                del self.tail[: len(self.tail) - self.keep]

    def result(self) -> tuple[str, bool]:
        """Decoded output, head + tail when longer than `limit` characters."""
        if self.total <= len(self.head) + len(self.tail):
            return truncate_output(bytes(self.head + self.tail), self.limit)
        # The middle was never stored: count what was dropped in bytes.
        tail = bytes(self.tail[-self.keep:])
        head_text = bytes(self.head).decode("utf-8", errors="replace")[: self.limit // 2]
        tail_text = tail.decode("utf-8", errors="replace")[-(self.limit - self.limit // 2):]
        cut = self.total - len(head_text.encode()) - len(tail_text.encode())
        return f"{head_text}\n[... {cut} bytes cut ...]\n{tail_text}", True


def exit_status(returncode: int) -> int:
    """Shell convention: 128+N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def run_captured(
    argv: Sequence[str],
    *,
    timeout: float,
    output_limit: int,
    env: dict[str, str],
    cwd: str | None = None,
    kill: Callable[[subprocess.Popen[bytes]], None] | None = None,
    started: Callable[[subprocess.Popen[bytes]], None] | None = None,
    after_exit: Callable[[subprocess.Popen[bytes]], None] | None = None,
    **popen_kw: Any,
) -> ExecResult:
    """Run `argv`, stdout+stderr interleaved through one pipe, killed with `kill` at `timeout`.

    `started` runs right after the process is created (bwrap: take hold of its pid 1; if it
    raises, the process is killed). `after_exit` runs once the main process has exited (the
    local backend kills its process group there, bwrap its pid namespace, since leftovers may
    still hold the pipe open).
    """
    start = time.monotonic()
    proc, out = _spawn(argv, env, cwd, popen_kw)
    kill = kill or _kill
    if started is not None:
        try:
            started(proc)
        except BaseException:
            kill(proc)
            proc.wait()
            os.close(out)
            raise
    buf = HeadTail(output_limit)
    timed_out, exited = _pump(proc, out, buf, start + timeout, kill, after_exit)
    if after_exit and not exited:
        after_exit(proc)
    output, truncated = buf.result()
    code = 124 if timed_out else exit_status(proc.returncode)
    return ExecResult(exit_code=code, output=output, timed_out=timed_out,
                      duration_s=time.monotonic() - start, truncated=truncated)


def _spawn(argv: Sequence[str], env: dict[str, str], cwd: str | None,
           popen_kw: dict[str, Any]) -> tuple[subprocess.Popen[bytes], int]:
    """The process, stdout+stderr into one pipe, and the pipe's read end."""
    out, w = os.pipe()
    open_to_sandbox_uid(w)
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=w, stderr=w,
            env=env, cwd=cwd, close_fds=True, **popen_kw,
        )
    except (OSError, ValueError) as e:  # e.g. a NUL byte in the command or the environment
        os.close(out)
        raise SandboxError(f"cannot start the command: {e}") from None
    finally:
        os.close(w)  # only the command holds the write end: EOF when it and its children are done
    return proc, out


def _pump(proc: subprocess.Popen[bytes], out: int, buf: HeadTail, deadline: float,
          kill: Callable[[subprocess.Popen[bytes]], None],
          after_exit: Callable[[subprocess.Popen[bytes]], None] | None) -> tuple[bool, bool]:
    """Read `out` into `buf` until EOF and the exit, killing the process at `deadline`; closes
    `out`. Returns (timed out, exit seen)."""
    timed_out = eof = exited = False
    drain_until: float | None = None  # stop waiting for EOF then (orphans, or after a kill)
    # A pidfd tells the exit without polling; without one, check every 100 ms.
    pidfd = _pidfd(proc.pid)
    poller = select.poll()
    poller.register(out, select.POLLIN | select.POLLHUP | select.POLLERR)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    try:
        while not (eof and exited):
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                kill(proc)
                drain_until = now + 2.0
            if drain_until is not None and now >= drain_until:
                break
            until = drain_until if drain_until is not None else deadline
            wait_s = until - now if pidfd is not None else min(until - now, 0.1)
            ready = {fd for fd, _ in poller.poll(max(wait_s, 0) * 1000)}
            if out in ready:
                eof = read_chunk(out, buf, poller)
            if not exited and (pidfd in ready if pidfd is not None else proc.poll() is not None):
                exited = True
                if pidfd is not None:
                    poller.unregister(pidfd)
                proc.poll()
                if after_exit:  # the local backend kills the leftovers of the process group
                    after_exit(proc)
                if not eof and drain_until is None:
                    drain_until = time.monotonic() + 0.5
        if proc.poll() is None:
            kill(proc)
        proc.wait()
    except BaseException:
        kill(proc)
        proc.wait()
        raise
    finally:
        os.close(out)
        if pidfd is not None:
            os.close(pidfd)
    return timed_out, exited


def read_chunk(fd: int, buf: HeadTail, poller: select.poll) -> bool:
    """Read what `fd` has into `buf`; at EOF unregister it from `poller` and return True."""
    data = os.read(fd, _CHUNK)
    if data:
        buf.add(data)
        return False
    poller.unregister(fd)
    return True


def open_to_sandbox_uid(fd: int) -> None:
    """Let the sandbox's uid reopen the output pipe (`echo x > /dev/stdout`, which reopens it
    through /proc/self/fd): a pipe made by host root is mode 0600, and root inside a user
    namespace is not host root. Only holders of the fd can reach the pipe anyway."""
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o666)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # Linux < 5.3, or not Linux
        return None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGKILL)
