"""Exec server: pid 1 of a sandbox's pid namespace, running one command at a time for the host.

The host starts it once per sandbox (`bwrap --as-pid-1 ... python3 -I -S -c BOOT FD`, this
source on stdin) instead of one container per command, and talks to it over the stream socket
FD. It knows nothing of its caller: a command is a `bash -c` script, a cwd, an environment and
a timeout. For each one it spawns `/bin/bash -c SCRIPT` in a new session with the output pipe
the host passed, waits for it (or its timeout), then kills every other process of the pid
namespace and undoes what a command can leave in /dev and SysV IPC before it replies: nothing a
command starts outlives it, and the next command starts as fresh as in a new container.

Protocol. Host to server, one frame per command: a 4-byte big-endian length, then NUL-separated
fields `timeout seconds, cwd, script, KEY=VALUE...`, with one fd (the write end of the output
pipe) attached as SCM_RIGHTS. Server to host: `ready\\n` once, then one line per command:
`exit STATUS TIMED_OUT CLEAN SIGNAL LEFT\\n` (STATUS in shell convention, 128+N for signal N; CLEAN 0
means the namespace could not be emptied: the host must kill the whole sandbox; SIGNAL the signal
that ended bash, 0 when it exited; LEFT how many other processes were alive when it ended). EOF on FD (the host
closed it or died): kill everything and exit, which ends the namespace.

Runs as `python3 -I -S` from the system (Python >= 3.9) and imports only modules that load fast.
"""

from __future__ import annotations

import _signal
import _socket
import os
import select
import sys
import time

KILL_TIMEOUT_S = 5.0
"""Longest time spent emptying the namespace after a command before giving up (the host then
kills the whole sandbox)."""
_RESET_SIGNALS = (_signal.SIGPIPE, _signal.SIGXFSZ)
"""Ignored by Python at startup, and ignored dispositions survive exec: commands get defaults."""
_IPC_RMID = 0
_renamed = [0]
"""Counter for unique names in remove_tree (per process: names are tried until free)."""

SOCKET_FD = -1
"""This server's end of the socket pair (inherited): the host writes its fd number into this line
of the source it sends, not on the command line, where `ps` inside would show a number that
differs between two identical sandboxes (InterCode's process-listing task saw it)."""

LONG_SCRIPT = 64 * 1024
"""Scripts longer than this (bytes) reach bash through a memfd (one exec argument is limited to
128 KiB): never through a file of the sandbox's tree, where a command could have planted a
symlink or a FIFO under the name."""
SCRIPT_FD = 3


def script_fd(script: bytes) -> int:
    """A memfd holding `script`, read from its start (bash sources it as /dev/fd/SCRIPT_FD)."""
    fd = os.memfd_create("clawloop-command", os.MFD_CLOEXEC)
    view = memoryview(script)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def libc_functions(*names: str) -> tuple:
    """C functions of libc returning int, with errno kept. Built on _ctypes directly: the ctypes
    package would be a large share of this server's start (once per sandbox)."""
    try:
        import _ctypes

        class Int(_ctypes._SimpleCData):
            _type_ = "i"

        class Fn(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
            _restype_ = Int

        class Lib:
            _handle = _ctypes.dlopen(None, 2)  # this process's libc; RTLD_NOW
        return tuple(Fn((name, Lib())) for name in names)
    except (ImportError, AttributeError, TypeError):  # another interpreter's internals
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return tuple(getattr(libc, name) for name in names)


def harden() -> None:
    """Make this process untouchable by the commands it runs.

    Commands run as the same uid without capabilities. Not dumpable, this process can then be
    neither ptraced nor read through /proc/1/{mem,fd,environ}: otherwise a command could take it
    over and outlive itself. As pid 1 it ignores every signal sent from inside the namespace that
    it has no handler for (SIGKILL included); SIGINT would raise KeyboardInterrupt, so back to
    the default. The parent-death signal ends it with the bwrap process that watches it.
    """
    (prctl,) = libc_functions("prctl")
    if prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        raise OSError("prctl(PR_SET_DUMPABLE, 0) failed")
    prctl(1, int(_signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)


class DevState:
    """What /dev looked like at start; `restore` puts it back after every command.

    bwrap's /dev is a writable tmpfs that used to be fresh for every command: a command may have
    added files, replaced the std* symlinks or /dev/shm (by a symlink into /workspace, say),
    filled /dev/shm or changed modes. Device nodes and /dev/pts are mount points that cannot be
    removed or replaced. Entries are compared by inode number: one scandir, no lstat per entry.
    """

    def __init__(self) -> None:
        self.entries = {e.name: (e.inode(), _link(e.path), e.is_dir(follow_symlinks=False))
                        for e in os.scandir("/dev")}
        self.modes = {p: os.lstat(p).st_mode & 0o7777 for p in ("/dev", "/dev/shm") if os.path.isdir(p)}

    def restore(self) -> None:
        _fix_mode("/dev", self.modes.get("/dev"))  # first: a command may have made it unreadable
        for e in os.scandir("/dev"):
            if e.inode() != self.entries.get(e.name, (None,))[0]:
                remove_tree(e.path)
        for name, (_, target, is_dir) in self.entries.items():
            path = "/dev/" + name
            if os.path.lexists(path) or not (target or is_dir):
                continue
            if target:
                os.symlink(target, path)
            else:
                os.mkdir(path)
            self.entries[name] = (os.lstat(path).st_ino, target, is_dir)
        if "/dev/shm" in self.modes:  # a real directory again by now, not a symlink
            _fix_mode("/dev/shm", self.modes["/dev/shm"])
            for name in os.listdir("/dev/shm"):
                remove_tree("/dev/shm/" + name)


def _fix_mode(path: str, mode: int | None) -> None:
    if mode is not None and os.lstat(path).st_mode & 0o7777 != mode:
        os.chmod(path, mode)


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def remove_tree(path: str) -> None:
    """rm -rf without recursion or long paths, also where directories were made unreadable (a
    command may nest dirs thousands deep, deeper than any recursion limit or PATH_MAX; the host
    deletes a sandbox's state dir with this too). Each directory found inside is first renamed
    to a fresh name directly in `path`, so none is ever more than two levels down; emptied, it
    is removed. Best effort: what cannot be removed (a mount point) stays."""
    try:
        os.unlink(path)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass  # a directory, or a mount point (which stays)
    todo = [path]  # dirs to empty: `path`, then the ones moved up into it
    while todo:
        d = todo.pop()
        try:
            os.chmod(d, 0o700)  # d is a directory here (unlink refused it), not a symlink
            entries = list(os.scandir(d))
        except OSError:
            entries = []
        for e in entries:
            try:
                if not e.is_dir(follow_symlinks=False):
                    os.unlink(e.path)
                elif d == path:
                    todo.append(e.path)  # already at the top: no move needed
                else:
                    todo.append(_move_up(e.path, path))
            except OSError:
                pass
        if d != path:
            _rmdir(d)
    _rmdir(path)


def _rmdir(path: str) -> None:
    try:  # noqa: SIM105 (contextlib would slow the start)
        os.rmdir(path)
    except OSError:
        pass


def _move_up(src: str, top: str) -> str:
    """Rename the directory `src` to a new name directly in `top`; its new path."""
    while True:
        _renamed[0] += 1
        dest = f"{top}/.rm-{_renamed[0]}"
        if os.path.lexists(dest):
            continue  # rename() would replace an empty dir, or fail on a file
        os.rename(src, dest)
        return dest


def remove_ipc() -> None:
    """Delete SysV shared memory, message queues and semaphores: the IPC namespace outlives
    commands now, so what one leaves there would hold memory (shm) for the sandbox's life."""
    for kind in ("shm", "msg", "sem"):
        try:
            fd = os.open("/proc/sysvipc/" + kind, os.O_RDONLY)
        except OSError:
            continue
        try:  # one read returns about a page of the listing: read to the end
            chunks = []
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(fd)
        lines = b"".join(chunks).splitlines()[1:]  # a header, then one line per object
        if lines:
            (ctl,) = libc_functions(kind + "ctl")
        for line in lines:
            ident = int(line.split()[1])
            ctl(*((ident, 0, _IPC_RMID) if kind == "sem" else (ident, _IPC_RMID, None)))


class Server:
    def __init__(self, ctl_fd: int) -> None:
        harden()
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0)  # stdin carried this source; stdout is unused
        os.dup2(null, 1)
        os.close(null)
        os.set_inheritable(ctl_fd, False)
        self.ctl = _socket.socket(fileno=ctl_fd)
        self.buf = b""
        # SIGCHLD wakes poll() through this pipe: orphans are reparented to pid 1 and must be
        # reaped at once (zombies count against the process limit), the command's bash too.
        self.wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        _signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        _signal.signal(_signal.SIGCHLD, lambda signum, frame: None)
        self.dev = DevState()
        self.main_pid = 0
        self.main_status: int | None = None
        self.left = 0  # processes alive when the command's bash ended

    # -- protocol -----------------------------------------------------------------------------

    def recv_request(self) -> tuple[list[bytes], list[int]] | None:
        """(fields, fds) of the next request; None on EOF."""
        fds: list[int] = []
        while len(self.buf) < 4 or len(self.buf) < 4 + int.from_bytes(self.buf[:4], "big"):
            data, anc, _, _ = self.ctl.recvmsg(1 << 20, _socket.CMSG_SPACE(4 * 4),
                                               _socket.MSG_CMSG_CLOEXEC)
            for level, kind, payload in anc:
                if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                    n = len(payload) - len(payload) % 4
                    fds += [int.from_bytes(payload[i:i + 4], sys.byteorder) for i in range(0, n, 4)]
            if not data:
                for fd in fds:
                    os.close(fd)
                return None
            self.buf += data
        size = 4 + int.from_bytes(self.buf[:4], "big")
        frame, self.buf = self.buf[4:size], self.buf[size:]
        return frame.split(b"\0"), fds

    def serve(self) -> None:
        self.ctl.sendall(b"ready\n")
        while True:
            req = self.recv_request()
            if req is None:
                break
            fields, fds = req
            if len(fields) < 3 or len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                break  # not our host: stop
            timeout = float(fields[0])
            self.main_status, self.left = None, 0
            status, timed_out = self.run(timeout if timeout >= 0 else 0.0, fields[1], fields[2],
                                         fields[3:], fds[0])
            # How bash ended, told apart from `exit 137`: a verifier killed by a process it ran
            # (an agent's program) is not a verifier that finished.
            sig = os.WTERMSIG(self.main_status) if self.main_status is not None and \
                os.WIFSIGNALED(self.main_status) else 0
            clean = self.kill_all()
            try:
                self.dev.restore()
                remove_ipc()
            except Exception as e:  # the command's status stands; the host starts a fresh container
                sys.stderr.write(f"cleanup after a command failed: {e!r}\n")
                clean = False
            self.ctl.sendall(b"exit %d %d %d %d %d\n" % (status, timed_out, clean, sig, self.left))
        self.kill_all()

    # -- one command --------------------------------------------------------------------------

    def run(self, timeout: float, cwd: bytes, script: bytes, env: list[bytes], out: int) -> tuple[int, bool]:
        """Spawn the command, wait for its bash to exit or the timeout; (status, timed_out)."""
        deadline = time.monotonic() + timeout
        try:
            try:
                os.chdir(cwd)
            except OSError as e:  # the message and status bwrap --chdir gave
                os.write(out, b"Can't chdir to %s: %s\n" % (cwd, e.strerror.encode()))
                return 1, False
            actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                       (os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, out, 2)]
            memfd = -1
            try:
                if len(script) > LONG_SCRIPT:  # past what one exec argument may hold
                    memfd = script_fd(script)
                    script = b". /dev/fd/%d" % SCRIPT_FD
                    actions.append((os.POSIX_SPAWN_DUP2, memfd, SCRIPT_FD))
                environ = dict(e.split(b"=", 1) for e in env)
                self.main_pid = os.posix_spawn(
                    "/bin/bash", [b"bash", b"-c", script], environ, setsid=True,
                    setsigdef=_RESET_SIGNALS, setsigmask=(), file_actions=actions)
            except (OSError, ValueError) as e:
                os.write(out, b"cannot run /bin/bash: %s\n" % str(e).encode())
                return 126, False
            finally:
                if memfd >= 0:
                    os.close(memfd)
        finally:
            os.close(out)  # the host's EOF must depend on the command's processes only
            os.chdir("/")
        poller = select.poll()
        poller.register(self.wake_r, select.POLLIN)
        poller.register(self.ctl.fileno(), select.POLLIN)
        while True:
            self.reap()
            if self.main_status is not None:
                self.left = len(_others_alive())  # before kill_all: what bash left behind
                return _shell_status(self.main_status), False
            left = deadline - time.monotonic()
            if left <= 0:
                return 124, True
            for fd, _ in poller.poll(min(left, 3600.0) * 1000):
                if fd == self.wake_r:
                    _drain(self.wake_r)
                else:  # EOF (the host went away or gave up): end the namespace
                    self.kill_all()
                    os._exit(0)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.main_pid:
                self.main_status = status

    def kill_all(self) -> bool:
        """SIGKILL every process of the namespace but this one until none is left.

        kill(-1) from pid 1 reaches every process of the namespace (all have our uid) and fails
        with ESRCH only when there is none, zombies included; /proc must agree.
        """
        end = time.monotonic() + KILL_TIMEOUT_S
        while True:
            self.reap()
            try:
                os.kill(-1, _signal.SIGKILL)
            except ProcessLookupError:
                if not _others_alive():
                    return True
            if time.monotonic() > end:
                return False
            # Wait for a SIGCHLD (a killed child or an adopted orphan), briefly.
            select.select([self.wake_r], [], [], 0.01)
            _drain(self.wake_r)


def _others_alive() -> list[str]:
    """Pids in /proc other than ours that are not zombies."""
    alive = []
    for name in os.listdir("/proc"):
        if name.isdigit() and name != "1":
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue  # gone meanwhile
            if state != b"Z":
                alive.append(name)
    return alive


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _shell_status(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    # The system python, not the project's: it may be older (the host shows this message).
    if sys.version_info < (3, 9):  # noqa: UP036 (os.waitstatus_to_exitcode)
        sys.exit(f"the exec server needs Python >= 3.9, {sys.executable} is {sys.version.split()[0]}")
    Server(SOCKET_FD).serve()
    os._exit(0)  # no interpreter teardown: the host may be waiting
