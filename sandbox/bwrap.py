"""The default backend: bubblewrap namespaces, one long-lived container per sandbox.

Inside: a read-only root built from binds (host /usr, a minimal /etc, the task runtime),
private writable top-level dirs (/workspace, /root, /home, /tmp, /logs, ...) kept in a
per-sandbox host state dir so files persist between commands, fresh /proc and /dev, no
network but the sandbox's own loopback, a pid namespace, no host environment, and per-command
rlimits.

Commands run through an exec server (sandbox/_server.py), pid 1 of the container, so that a
command costs a fraction of a container start (benchmarks/perf/README.md). Per command it spawns
`bash -c` in a new session and, once bash exits or times out, kills every other process of the
pid namespace before it answers: nothing a command starts outlives it, as with a container per
command. Bind mounts are fixed when bwrap starts, so the first command after open() or a
`mount()` change runs in a one-shot container of its own (as every command used to: often it is
the only one), and the server (re)starts at the next; one that died is replaced.

When clawloop runs as root, bwrap runs as an unprivileged host uid (sandbox/_host.py), which owns
the sandbox's state dir. Limits of the whole sandbox (a cgroup for memory and processes, a tmpfs
for files: sandbox/_limits.py) come on top of per-command rlimits where the host allows them;
`limits` says which. The host holds every container's pid 1 (sandbox/_pid1.py): it ends the pid
namespace after a one-shot command and at close, whatever pid 1 was made to do.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path

from sandbox import _merge
from sandbox import _trusted as trusted
from sandbox._bwrap_layers import BwrapLayers
from sandbox._bwrap_run import DISK, SHM_MB, BwrapContainers, cleanup
from sandbox._execserver import ExecServer, find_python
from sandbox._host import HostIdentity, bwrap_version, find_bwrap, host_identity
from sandbox._layout import (
    LONG_COMMAND,
    PYGUARD_MOUNT,
    RESERVED_TOPS,
    RUNTIME_MOUNT,
    WRITABLE_TOPS,
    Backend,
    base_env,
    etc_template,
    pyguard_dir,
    reachable_by,
    shell_script,
    venv_origin,
)
from sandbox._limits import Cgroup, whole_sandbox_limits
from sandbox._owners import copy_etc, give_tree, make_private, tree_readable
from sandbox._paths import (
    FileView,
    Mount,
    copy_back,
    mount_source,
    rmtree_force,
    sandbox_path,
    state_prefix,
    tmp_root,
)
from sandbox._pid1 import Launch
from sandbox.base import ExecResult, SandboxConfig, SandboxError

__all__ = ["BwrapSandbox", "HostIdentity", "bwrap_version", "find_bwrap", "host_identity"]

class BwrapSandbox(BwrapLayers, BwrapContainers, Backend):
    """A sandbox whose commands run one at a time in its bubblewrap container."""

    backend = "bwrap"

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        self._bwrap = find_bwrap()
        self._ident = host_identity(self._bwrap)
        # No user namespaces inside (less kernel attack surface); the option is new in 0.8.
        self._no_nested_userns = ["--disable-userns"] if bwrap_version(self._bwrap) >= (0, 8) else []
        self._sized_tmpfs = bwrap_version(self._bwrap) >= (0, 6)  # --size (and --perms)
        self.process_limit_enforced = self._ident.process_limit_enforced
        self._etc = etc_template()
        self._python = find_python(self._runtime, RUNTIME_MOUNT)
        self._servers: list[ExecServer] = []  # the running one, if any (shared with the finalizer)
        self._oneshot_argv: list[str] | None = None  # the mount set (as the server's argv) and
        self._oneshots = 0  # how many one-shot containers ran for it
        owner = self._ident.run_as
        base = tmp_root()
        if owner and not reachable_by(base, owner[0]):
            raise SandboxError(f"{base}: not traversable by the sandbox uid {owner[0]}; "
                               "set CLAWLOOP_SANDBOX_TMP to a world-accessible dir such as /tmp")
        self.state_dir = Path(tempfile.mkdtemp(prefix=state_prefix("bwrap"), dir=base))
        self._cgroups: list[Cgroup] = []  # the sandbox's cgroup, if the host gives one
        self._overlays: dict[Path, list[Path]] = {}  # merged mount point -> lower dirs (add_layers)
        self._layer_keys: list[str] = []
        self._userns: list[_merge.UserNs] = []  # the namespace of several uids, if enabled
        weakref.finalize(self, _close_all, self._userns)
        # Stopped and deleted at close, garbage collection or interpreter exit, whichever first.
        self._finalizer = weakref.finalize(self, cleanup, self._servers, self.state_dir, self._cgroups)
        try:
            self._setup(owner)
        except BaseException:
            self.close()
            raise

    # -- layout ---------------------------------------------------------------------------

    def _setup(self, owner: tuple[int, int] | None) -> None:
        os.chmod(self.state_dir, 0o711)  # the sandbox uid must reach disk/root/, nothing else
        # disk/ holds all the sandbox's files, under its quota: root/ (what commands see as /),
        # the trusted roots of verifiers and the host's scratch dirs (tests, reward logs).
        self.disk = self.state_dir / DISK
        self.disk.mkdir()
        self.limits, cgroup = whole_sandbox_limits(self.config, self.disk, owner,
                                                   self.process_limit_enforced, SHM_MB)
        self._cgroups += [cgroup] if cgroup else []
        os.chmod(self.disk, 0o755)
        self.root = self.disk / "root"
        self.root.mkdir()
        self._trusted: Path | None = None  # the trusted root while a `trusted_root` block runs
        self._carried: list[str] = []  # the agent's top-level dirs bound over it
        self._etc_frozen: Path | None = None  # the /etc of trusted roots (`freeze_etc`); None: self._etc
        self._etc_verifier: Path | None = None  # it with the agent's deliverables, in a block that has any
        self._ran = False  # has a command run (and so maybe changed /etc)?
        # Copy-on-write root: the root dir and /etc are the sandbox's own (in its tmpfs as root),
        # so `WORKDIR /app`, `mkdir /etc/sudoers.d` work as in an image and vanish at close.
        self._view = FileView(self.root, owner)
        self._chown(self.root)
        trusted.system_links(self.root)
        for top in trusted.SYMLINKS:
            if os.path.lexists(self.root / top):
                self._chown(self.root / top, follow=False)
        for name in ("usr", "proc", "dev"):
            self._mkdir(self.root / name)
        copy_etc(self._etc, self.root / "etc", owner)
        self._view.add(Mount("/usr", Path("/usr"), False, system=True))
        self._view.add(Mount("/proc", None, False, system=True))
        self._view.add(Mount("/dev", None, False, system=True))
        self._view.add(Mount("/sys", None, False, system=True))
        self._tops: set[str] = set()
        self._user_mounts: set[str] = set()
        self._copy_back: dict[str, tuple[Path, Path]] = {}
        if self._runtime:
            if owner and not reachable_by(self._runtime, owner[0]):
                raise SandboxError(f"runtime {self._runtime}: not readable by the sandbox uid "
                                   f"{owner[0]} (a parent directory is private)")
            self._view.add(Mount(RUNTIME_MOUNT, self._runtime, False, system=True))
            self._stub(RUNTIME_MOUNT)
            origin = venv_origin(self._runtime)
            # Console scripts (pytest, pip) have the venv's build path in their shebang: a
            # symlink from there (in the read-only root) makes them work, at no mount's cost.
            if (origin and origin != RUNTIME_MOUNT and origin.startswith("/")
                    and origin.strip("/").split("/")[0] not in RESERVED_TOPS | set(WRITABLE_TOPS)):
                link = self.root / sandbox_path(origin).lstrip("/")
                if link.parent != self.root:
                    self._stub(str(link.parent.relative_to(self.root)))
                    os.symlink(RUNTIME_MOUNT, link)
        self._view.add(Mount(PYGUARD_MOUNT, pyguard_dir(self.state_dir), False, system=True))
        self._stub(PYGUARD_MOUNT)
        for top in WRITABLE_TOPS:
            self._add_top(top)
        os.chmod(self.root / "tmp", 0o1777)
        self._mkdir(self.root / "home" / "user")
        self._mkdir(self.root / "var" / "tmp")
        os.chmod(self.root / "var" / "tmp", 0o1777)
        self._add_top(self._workspace.strip("/").split("/")[0])
        _, ws_host, ws_mount = self._view.resolve(self._workspace)
        self._view.makedirs(self._workspace, ws_mount)
        if self.config.seed_dir is not None:
            self._seed(Path(self.config.seed_dir), ws_host)

    def _chown(self, p: Path, follow: bool = True) -> None:
        if self._ident.run_as:
            os.chown(p, *self._ident.run_as, follow_symlinks=follow)

    def _mkdir(self, p: Path) -> None:
        p.mkdir(parents=True, exist_ok=True)
        self._chown(p)

    def _stub(self, target: str) -> None:
        """Create the mount point of `target` in the root commands see (the trusted one inside a
        `trusted_root` block)."""
        cur = self._trusted or self.root
        for part in target.strip("/").split("/"):
            cur = cur / part
            if not cur.is_dir() or cur.is_symlink():
                if cur.is_symlink() or cur.exists():
                    raise SandboxError(f"mount point {target}: {cur.name} is not a directory")
                self._mkdir(cur)

    def _add_top(self, top: str) -> None:
        target = "/" + top
        if target not in self._view.mounts:
            self._mkdir(self.root / top)
            self._view.add(Mount(target, self.root / top, True))
            self._tops.add(top)

    def _seed(self, seed: Path, dest: Path | None) -> None:
        if not seed.is_dir():
            raise SandboxError(f"seed_dir {seed}: not a directory")
        assert dest is not None
        try:
            shutil.copytree(seed, dest, symlinks=True, dirs_exist_ok=True)
        except shutil.Error as e:  # a file that did not fit the disk quota, say
            raise SandboxError(f"seed_dir {seed}: {str(e)[:300]}") from None
        if self._ident.run_as:
            for dirpath, dirnames, filenames in os.walk(dest):
                for n in [*dirnames, *filenames]:
                    os.chown(os.path.join(dirpath, n), *self._ident.run_as, follow_symlinks=False)

    # -- layers and uids (sandbox/_merge.py) ------------------------------------------------

    def enable_uids(self) -> None:
        """Run the following commands in a user namespace with uids 0..65535 (root inside keeps
        the capabilities to switch among them), as Docker does; SandboxError when the host
        cannot (not root, no unshare/nsenter)."""
        with self._lock:
            self._check_open()
            if self._userns:
                return
            owner = self._ident.run_as
            if owner is None:
                raise SandboxError("several uids need clawloop to run as root, with bwrap dropped to the "
                                   "sandbox uid (the host writes that uid's namespace map)")
            self._userns.append(_merge.UserNs(owner, _merge.uid_base()))

    @property
    def layers(self) -> list[str]:
        """Keys of the layers merged into this sandbox."""
        return list(self._layer_keys)

    def _bwrap_argv(self, launch: Launch | None, *rest: str) -> list[str]:
        argv = super()._bwrap_argv(launch, *rest)
        if self._userns:
            argv = _merge.with_userns(argv, self._bwrap)
        else:
            argv = _merge.with_caps(argv, self._bwrap, _merge.FILE_CAPS)
        if not self._overlays and not self._userns:
            return argv
        return _merge.wrap(argv, self._overlays, self._userns[0].pid if self._userns else None)

    # -- Sandbox protocol -----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError("sandbox is closed")

    def exec(self, command: str, timeout: float = 60.0, *, cwd: str | None = None,
             env: dict[str, str] | None = None) -> ExecResult:
        """Run `command` with `bash -c`; at `timeout` kill it and everything it started."""
        with self._lock:
            self._check_open()
            full_env = base_env(self.config, self._runtime is not None)
            full_env.update(env or {})
            refused = _check_strings(command, full_env)
            if refused:
                return refused
            # A command too long for one exec argument goes to the exec server over its socket,
            # which hands it to bash through a memfd: nothing is written into the sandbox's tree.
            self._ran = True
            script = shell_script(self.config, command)
            result = self._run(script, sandbox_path(cwd or self._workspace), full_env, timeout,
                               oneshot=len(script.encode()) <= LONG_COMMAND)
            for mirror, host in self._copy_back.values():
                copy_back(mirror, host)
            return result

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Create or replace a file; a new top-level dir (e.g. /app) becomes writable too."""
        with self._lock:
            self._check_open()
            spath, _, mount = self._view.resolve(path)
            parts = spath.strip("/").split("/")
            if parts[0] in RESERVED_TOPS and mount is None:
                raise SandboxError(f"{path}: {parts[0]} is a system dir (write it with a command)")
            self._view.write(path, data, mode)

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """Read a file of the sandbox's own dirs; symlinks resolve as inside, never to the host."""
        with self._lock:
            self._check_open()
            spath, _, mount = self._view.resolve(path)
            if spath.strip("/").split("/")[0] in RESERVED_TOPS and mount is None:
                raise SandboxError(f"{path}: a system dir")
            return self._view.read(path, max_bytes)

    def mount(self, host_path: Path, target: str, *, writable: bool = False) -> None:
        """Bind a host directory at `target` for the following commands (replacing one there).

        When bwrap runs as a dropped uid (clawloop as root), a writable mount is chowned to that
        uid so the sandbox can write it. A source that uid cannot reach or read (e.g. inside a
        0700 mkdtemp dir) is shown as a copy; a writable copy is copied back to the host,
        regular files only, after every command.
        """
        with self._lock:
            self._check_open()
            host = mount_source(host_path)
            t = sandbox_path(target)
            inside: Mount | None
            if self._trusted is not None and t.count("/") == 1 and t not in self._view.mounts:
                # A new top-level mount point of the trusted root, which is the host's: an entry
                # the agent left under that name gives way (its dir or link is not shown).
                trusted.clear_top(self._trusted, t[1:])
                self._carried = [c for c in self._carried if c != t[1:]]
                inside = None
            else:
                resolved, _, inside = self._view.resolve(t)
                if resolved != t:
                    raise SandboxError(f"mount target {target}: resolves to {resolved} (a symlink)")
            top = t.strip("/").split("/")[0]
            if t == "/" or top in RESERVED_TOPS or (inside is not None and inside.system):
                raise SandboxError(f"mount target {target}: inside the read-only system view")
            owner = self._ident.run_as
            if owner and not (reachable_by(host, owner[0]) and (writable or tree_readable(host))):
                # The sandbox uid cannot reach it (e.g. under a 0700 mkdtemp dir): show a copy,
                # and copy a writable one back to the host after every command.
                mirror = Path(tempfile.mkdtemp(dir=self.disk, prefix="mnt-"))
                shutil.copytree(host, mirror, symlinks=True, dirs_exist_ok=True)
                give_tree(mirror, owner if writable else None)
                if writable:
                    self._copy_back[t] = (mirror, host)
                host = mirror
            elif owner and writable:
                give_tree(host, owner)
            if owner and self._userns and not writable:
                # Several uids: a read-only mount is root's alone inside, as files Docker copies
                # in become root's and a verifier's `chmod -R go-rwx /tests` leaves them (a bind
                # cannot be chmodded): a copy owned by the sandbox's root, group and other bits
                # cleared, so a process run as another user cannot read the hidden tests.
                mirror = Path(tempfile.mkdtemp(dir=self.disk, prefix="mnt-"))
                shutil.copytree(host, mirror, symlinks=True, dirs_exist_ok=True)
                make_private(mirror, owner)
                host = mirror
            if inside is None and t.count("/") == 1:
                self._stub(t)  # a new top-level mount point such as /tests
            else:
                if inside is None:
                    self._add_top(top)
                    inside = self._view.mounts["/" + top]
                if inside.writable:
                    self._view.makedirs(t, inside)
                elif not (self._view.locate(t)[1] or Path("/nonexistent")).is_dir():
                    raise SandboxError(f"mount target {target}: inside read-only mount {inside.target}")
            self._view.add(Mount(t, host, writable))
            self._user_mounts.add(t)

    def unmount(self, target: str) -> None:
        """Remove a mount added with `mount` (unknown targets are ignored)."""
        with self._lock:
            t = sandbox_path(target)
            if t in self._user_mounts:
                self._user_mounts.discard(t)
                self._view.remove(t)
                self._copy_back.pop(t, None)
                top = t.strip("/")
                if top in self._tops:  # a mount over a private top-level dir: show it again
                    self._view.add(Mount(t, self.root / top, True))

    def _storage(self) -> Path:
        return self.disk

    @contextlib.contextmanager
    def trusted_root(self) -> Iterator[None]:
        """Commands in the block run on a fresh root bound read-only (`sandbox/_trusted.py`):
        the sandbox's original system links, /etc as frozen (`freeze_etc`), the agent's top-level
        dirs carried over."""
        with self._lock:
            self._check_open()
            if self._trusted is not None:
                raise SandboxError("trusted_root: already inside one")
            dest = Path(tempfile.mkdtemp(prefix="trusted-", dir=self.disk))
            etc = Path(tempfile.mkdtemp(prefix="etc-verifier-", dir=self.disk))
            etc.rmdir()
            try:
                points = [m.target for m in self._view.mounts.values() if m.host is not None]
                carried = trusted.build(self.root, dest, points)
                merged = trusted.verifier_etc(self.root / "etc", self._etc_frozen or self._etc, etc)
            except (OSError, SandboxError) as e:
                rmtree_force(dest)
                rmtree_force(etc)
                raise SandboxError(f"cannot build the trusted root: {e}") from None
            self._trusted, self._carried, self._etc_verifier = dest, carried, etc if merged else None
        try:
            yield
        finally:
            with self._lock:
                self._trusted, self._carried, self._etc_verifier = None, [], None
                rmtree_force(dest)
                rmtree_force(etc)

    def freeze_etc(self) -> None:
        """A copy of the sandbox's /etc as it is now becomes every later trusted root's /etc
        (sandbox/_trusted.py: never the agent's later edits)."""
        with self._lock:
            self._check_open()
            if not self._ran and self._etc_frozen is None:
                return  # no command yet: /etc is the template with its layers (self._etc) as it is
            dest = Path(tempfile.mkdtemp(prefix="etc-built-", dir=self.disk))
            dest.rmdir()
            try:
                trusted.freeze_etc(self.root / "etc", dest)
            except (OSError, SandboxError) as e:
                rmtree_force(dest)
                raise SandboxError(f"cannot freeze /etc: {e}") from None
            old, self._etc_frozen = self._etc_frozen, dest
            if old is not None:
                rmtree_force(old)

    def close(self) -> None:
        """Stop the container (killing anything in it) and delete the state dir."""
        self._closed = True
        self._finalizer()


def _close_all(held: list[_merge.UserNs]) -> None:
    while held:
        held.pop().close()


def _check_strings(command: str, env: dict[str, str]) -> ExecResult | None:
    """What bwrap and exec(2) refused before the server existed, refused the same way here (the
    server must not get it): a NUL byte is a SandboxError, a bad variable name a failed command."""
    if "\0" in command or any("\0" in k or "\0" in v for k, v in env.items()):
        raise SandboxError("cannot start the command: embedded null byte")
    bad = [k for k in env if not k or "=" in k]
    if bad:
        return ExecResult(1, f"bwrap: setenv failed: bad variable name {bad[0]!r}\n", False, 0.0)
    return None
