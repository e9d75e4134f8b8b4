"""The `docker` backend: one container per sandbox, one `docker exec` per command.

The container has no network, a memory and a pids limit, private tmpfs dirs (/tmp, /var/tmp,
/root, /home, /srv, /mnt, /run; `disk_mb` each), and host-backed binds of a per-sandbox state dir
at the workspace, /logs and /tests (no quota there). Like bwrap's copy-on-write root, the rest of
the root is writable (`WORKDIR /app`, /etc; the container's own layer, no quota, gone at close)
while /usr and the image's runtime stay read-only: read-only binds of the image's own layer when
it is one overlay2 layer (as `clawloop sandbox build-image` makes it), else a read-only root. Its pid 1 is a small shell loop that reaps
orphans (what `init=True` would do) and, unlike docker-init, survives the `kill -9 -1` with
which every command ends: nothing a command starts outlives it, setsid'd daemons included.

The image is `config.image` (a task's own, built by `sandbox.docker_build`), else
CLAWLOOP_DOCKER_IMAGE, else clawloop-sandbox:latest.

Limits compared with bwrap: containers cannot gain mounts after they start, so `mount()` copies
the host dir into the workspace, /logs or /tests (/tests is read-only inside; elsewhere
read-only is not enforced) and copies writable mounts back after every command. Commands run as
root inside the container (with a reduced capability set and no-new-privileges).
"""

from __future__ import annotations

import atexit
import os
import posixpath
import re
import shutil
import tempfile
import time
import uuid
import weakref
from pathlib import Path
from typing import Any

from sandbox._layout import (
    LONG_COMMAND,
    PYGUARD_MOUNT,
    RESERVED_TOPS,
    RUNTIME_MOUNT,
    SYSTEM_PATH,
    Backend,
    base_env,
    pyguard_dir,
    shell_script,
    venv_origin,
)
from sandbox._paths import (
    FileView,
    Mount,
    copy_back,
    mount_source,
    pid_alive,
    rmtree_force,
    sandbox_path,
    state_prefix,
)
from sandbox._proc import HeadTail
from sandbox.base import ExecResult, SandboxConfig, SandboxError

DEFAULT_IMAGE = "clawloop-sandbox:latest"
LABEL = "clawloop.sandbox"
_XFER = "/.clawloop-xfer"
SEED_DIR = "/.clawloop-seed"
SEED_LABEL = "clawloop.seed"
_TMPFS = ("/tmp", "/var/tmp", "/root", "/home", "/srv", "/mnt", "/run")
# pid 1: reap orphans, exit promptly on `docker stop`, and restart its sleep when killed.
_INIT = 'trap "exit 0" TERM; mkdir -p /home/user; while :; do sleep 86400 & wait $!; done'
# stderr joins stdout before the command starts: docker would deliver them on two streams in
# no fixed order. Every command ends by killing everything but pid 1 (and the killer itself),
# and by deleting the SysV IPC objects it left (the container's IPC namespace outlives it).
_WRAP = ('exec 2>&1; timeout -s KILL "$1" bash -c "$2"; rc=$?; kill -9 -1 2>/dev/null; '
         'ipcrm -a 2>/dev/null; exit $rc')
_DROP_CAPS = ["NET_RAW", "MKNOD", "SYS_CHROOT", "AUDIT_WRITE", "SETFCAP", "NET_BIND_SERVICE"]

_STATE_DIR = re.compile(r"/[\w./-]*/clawloop-docker-\d+-\w+")
_live: weakref.WeakSet[DockerSandbox] = weakref.WeakSet()


def image_name() -> str:
    return os.environ.get("CLAWLOOP_DOCKER_IMAGE", DEFAULT_IMAGE)


def client(timeout: int = 24 * 3600) -> Any:
    """A docker SDK client whose daemon answers; SandboxError saying why not otherwise."""
    try:
        import docker
    except ImportError:
        raise SandboxError("the docker backend needs the docker SDK: pip install 'clawloop[docker]'") from None
    try:
        c = docker.from_env(timeout=timeout)
        c.ping()
        return c
    except Exception as e:
        raise SandboxError(f"docker daemon unreachable ({type(e).__name__}: {str(e)[:200]}); "
                           "start it, or run scripts/docker-setup.sh") from None


def unavailable_reason(image: str | None = None) -> str | None:
    """None when the docker backend can run here, else why not (for skips and `doctor`)."""
    try:
        c = client(timeout=10)
    except SandboxError as e:
        return str(e)
    try:
        c.images.get(image or image_name())
    except Exception:
        return f"image {image or image_name()} not found: run `clawloop sandbox build-image`"
    return None


def reap(everything: bool = False) -> int:
    """Remove sandbox containers left by crashed runs (owner pid gone); all of them if asked."""
    c = client(timeout=60)
    n = 0
    # ignore_removed: another process may remove its containers while we list them.
    for ctr in c.containers.list(all=True, filters={"label": f"{LABEL}=1"}, ignore_removed=True):
        pid = int(ctr.labels.get("clawloop.pid", "0") or 0)
        host = ctr.labels.get("clawloop.host", "")
        if everything or (host == os.uname().nodename and pid and not pid_alive(pid)):
            try:
                ctr.remove(force=True)
                n += 1
            except Exception:
                continue
            state = ctr.labels.get("clawloop.state", "")
            if _STATE_DIR.fullmatch(state):  # only our own temp dirs, never a path from elsewhere
                rmtree_force(Path(state))
    return n


@atexit.register
def _remove_all() -> None:
    for sb in list(_live):
        sb.close()


class DockerSandbox(Backend):
    """A sandbox backed by one long-lived container."""

    backend = "docker"
    process_limit_enforced = True

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        self._client = client()
        self._ctr: Any = None
        self._synced: dict[str, Path] = {}
        self.image = config.image or image_name()
        try:
            img = self._client.images.get(self.image)
        except Exception:
            hint = "run `clawloop sandbox build-image`" if config.image is None else "build it first"
            raise SandboxError(f"image {self.image} not found: {hint}") from None
        self.state_dir = Path(tempfile.mkdtemp(prefix=state_prefix("docker")))
        self._finalizer = weakref.finalize(self, rmtree_force, self.state_dir)
        hosts = {name: self.state_dir / name for name in ("ws", "logs", "tests", "xfer")}
        for d in hosts.values():
            d.mkdir()
        self._view = FileView(self.state_dir / "none")
        self._view.root_writable = False
        self._view.add(Mount(self._workspace, hosts["ws"], True))
        self._view.add(Mount("/logs", hosts["logs"], True))
        self._view.add(Mount("/tests", hosts["tests"], False))
        self._xfer = hosts["xfer"]
        if config.seed_dir is not None:
            if not Path(config.seed_dir).is_dir():
                self.close()
                raise SandboxError(f"seed_dir {config.seed_dir}: not a directory")
            shutil.copytree(config.seed_dir, hosts["ws"], symlinks=True, dirs_exist_ok=True)
        volumes = [f"{hosts['ws']}:{self._workspace}:rw", f"{hosts['logs']}:/logs:rw",
                   f"{hosts['tests']}:/tests:ro", f"{self._xfer}:{_XFER}:rw",
                   f"{pyguard_dir(self.state_dir)}:{PYGUARD_MOUNT}:ro"]
        # An image built by `clawloop sandbox build-image` carries its own runtime.
        has_runtime = bool((img.labels or {}).get("clawloop.runtime"))
        if self._runtime and not has_runtime:
            volumes.append(f"{self._runtime}:{RUNTIME_MOUNT}:ro")
            origin = venv_origin(self._runtime)
            if origin and origin != RUNTIME_MOUNT:  # console scripts' shebangs point there
                volumes.append(f"{self._runtime}:{origin}:ro")
        self._env = base_env(config, has_runtime or self._runtime is not None)
        system = _system_binds(img, has_runtime)
        volumes += system
        mb = f"{config.memory_mb}m"
        try:
            self._ctr = self._client.containers.run(
                self.image, ["/bin/sh", "-c", _INIT], detach=True, network_mode="none",
                mem_limit=mb, memswap_limit=mb, pids_limit=config.max_processes + 8,
                read_only=not system, tmpfs={p: f"rw,exec,nosuid,nodev,size={config.disk_mb}m"
                                       + (",mode=1777" if "tmp" in p else "") for p in _TMPFS},
                volumes=volumes, working_dir=self._workspace, hostname="sandbox",
                environment=self._env, cap_drop=_DROP_CAPS, security_opt=["no-new-privileges"],
                labels={LABEL: "1", "clawloop.pid": str(os.getpid()),
                        "clawloop.host": os.uname().nodename, "clawloop.state": str(self.state_dir)})
        except Exception as e:
            self.close()
            raise SandboxError(f"docker: cannot start a container from {self.image}: {str(e)[:300]}") from None
        _live.add(self)
        seed = (img.labels or {}).get(SEED_LABEL)
        if seed:  # a task image's files where the workspace bind hides them (sandbox.docker_build)
            r = self._run(["cp", "-a", f"{SEED_DIR}{seed}/.", f"{seed}/"], 120, limit=2000)
            if r.exit_code != 0:
                self.close()
                raise SandboxError(f"docker: cannot place the image's {seed} files: {r.output.strip()[:300]}")

    # -- helpers --------------------------------------------------------------------------

    def _run(self, argv: list[str], timeout: float, env: dict[str, str] | None = None,
             cwd: str | None = None, limit: int | None = None) -> ExecResult:
        api = self._client.api
        start = time.monotonic()
        buf = HeadTail(limit or self.config.output_limit)
        try:
            ex = api.exec_create(self._ctr.id, argv, environment=env or self._env,
                                 workdir=cwd or self._workspace)
            for chunk in api.exec_start(ex["Id"], stream=True):
                buf.add(chunk)
            code = api.exec_inspect(ex["Id"]).get("ExitCode")
        except Exception as e:  # docker.errors.* (container gone, bad workdir, daemon down)
            raise SandboxError(f"docker exec failed: {str(e)[:300]}") from None
        duration = time.monotonic() - start
        # `timeout -s KILL` reports the killed command's status (137), some versions 124; a
        # command exiting so by itself before the deadline is not a timeout.
        timed_out = code in (124, 137) and duration >= timeout * 0.95
        output, truncated = buf.result()
        return ExecResult(exit_code=124 if timed_out else int(code if code is not None else 125),
                          output=output, timed_out=timed_out, duration_s=duration, truncated=truncated)

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError("sandbox is closed")

    def _sync_back(self) -> None:
        for target, dest in self._synced.items():
            _, src, _ = self._view.resolve(target)
            if src is not None and src.is_dir():
                copy_back(src, dest)

    # -- Sandbox protocol -----------------------------------------------------------------

    def exec(self, command: str, timeout: float = 60.0, *, cwd: str | None = None,
             env: dict[str, str] | None = None) -> ExecResult:
        """Run `command` with `bash -c` under `timeout -s KILL`, then kill all it left behind."""
        with self._lock:
            self._check_open()
            full_env = {**self._env, **(env or {})}
            cmd_file = None
            if len(command.encode()) > LONG_COMMAND:
                name = f"command-{uuid.uuid4().hex}.sh"
                (self._xfer / name).write_text(command)
                cmd_file = f"{_XFER}/{name}"
            script = shell_script(self.config, command, cmd_file)
            try:
                r = self._run(["/bin/sh", "-c", _WRAP, "sh", f"{timeout:.3f}", script], timeout,
                              env=full_env, cwd=sandbox_path(cwd or self._workspace))
            finally:
                if cmd_file:
                    (self._xfer / cmd_file.rsplit("/", 1)[1]).unlink(missing_ok=True)
            self._sync_back()
            return r

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Stage the bytes in the transfer dir, then copy them into place inside the container."""
        with self._lock:
            self._check_open()
            p = sandbox_path(path)
            if p.strip("/").split("/")[0] in RESERVED_TOPS:  # as bwrap: the system is no task's place
                raise SandboxError(f"{path}: {p.strip('/').split('/')[0]} is a system dir (write it with a command)")
            name = uuid.uuid4().hex
            (self._xfer / name).write_bytes(data.encode() if isinstance(data, str) else data)
            r = self._run(["/bin/sh", "-c", 'mkdir -p "$(dirname "$2")" && cat "$1" > "$2" && chmod "$3" "$2"; '
                           'rc=$?; rm -f "$1"; exit $rc', "sh", f"{_XFER}/{name}", p, f"{mode & 0o7777:o}"],
                          60, limit=2000)
            if r.exit_code != 0:
                raise SandboxError(f"{path}: cannot write in the container: {r.output.strip()[:300]}")

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """Copy the file (resolved inside the container, so symlinks stay inside) out and read it."""
        with self._lock:
            self._check_open()
            p = sandbox_path(path)
            name = uuid.uuid4().hex
            n = str(max_bytes) if max_bytes is not None else "-0"
            cmd = ('[ -e "$1" ] || exit 3; [ -f "$1" ] || exit 4; '
                   'if [ "$3" = -0 ]; then cat "$1" > "$2"; else head -c "$3" "$1" > "$2"; fi')
            r = self._run(["/bin/sh", "-c", cmd, "sh", p, f"{_XFER}/{name}", n], 60, limit=2000)
            if r.exit_code == 3:
                raise FileNotFoundError(2, "no such file in the sandbox", path)
            if r.exit_code != 0:
                raise SandboxError(f"{path}: cannot read: {r.output.strip()[:300] or 'not a regular file'}")
            try:
                return FileView(self._xfer).read("/" + name)
            finally:
                (self._xfer / name).unlink(missing_ok=True)

    def mount(self, host_path: Path, target: str, *, writable: bool = False) -> None:
        """Copy a host dir into the workspace, /logs or /tests (see the module docstring)."""
        with self._lock:
            self._check_open()
            host = mount_source(host_path)
            t = sandbox_path(target)
            spath, dest, carrier = self._view.resolve(t)
            if carrier is None or dest is None or spath != t:
                raise SandboxError(
                    f"docker backend: cannot mount at {target}; containers cannot gain mounts, so "
                    f"targets must lie under {self._workspace}, /logs or /tests (and not be symlinks)")
            _clear(dest, keep_dir=spath == carrier.target)  # a bind's own dir must stay
            self._view.makedirs(posixpath.dirname(spath), carrier)
            shutil.copytree(host, dest, symlinks=True, dirs_exist_ok=True)
            if writable:
                self._synced[t] = host

    def unmount(self, target: str) -> None:
        with self._lock:
            t = sandbox_path(target)
            if t in self._synced:
                self._sync_back()
                del self._synced[t]
            spath, dest, carrier = self._view.resolve(t)
            if carrier is not None and dest is not None and spath == t:
                _clear(dest, keep_dir=spath == carrier.target)

    def close(self) -> None:
        """Remove the container (SIGKILL, no stop grace) and the state dir. Idempotent."""
        if self._closed:
            return
        self._closed = True
        ctr, self._ctr = self._ctr, None
        if ctr is not None:
            try:
                if os.geteuid() != 0:
                    # Files the container's root made are not ours to delete: empty the binds
                    # from inside first.
                    ctr.exec_run(["/bin/sh", "-c", f"find {self._workspace} /logs {_XFER} -mindepth 1 -delete"])
                ctr.remove(force=True)
            except Exception:
                pass
        _live.discard(self)
        self._finalizer()


def _system_binds(img: Any, has_runtime: bool) -> list[str]:
    """Read-only binds of the image's own /usr (and runtime) when the image is one overlay2 layer.

    A container cannot remount part of its root read-only (no CAP_SYS_ADMIN), but that layer's
    directory on the daemon's host is the image's rootfs: binding its /usr read-only gives the
    sandbox a writable root over a read-only system, as bwrap's. [] otherwise (multi-layer images,
    other storage drivers): the caller then keeps the whole root read-only.
    """
    driver = (img.attrs or {}).get("GraphDriver") or {}
    data = driver.get("Data") or {}
    upper = data.get("UpperDir")
    if driver.get("Name") != "overlay2" or data.get("LowerDir") or not upper:
        return []
    binds = [f"{upper}/usr:/usr:ro"]
    if has_runtime:
        binds.append(f"{upper}{RUNTIME_MOUNT}:{RUNTIME_MOUNT}:ro")
    return binds


def _clear(path: Path, keep_dir: bool) -> None:
    if not keep_dir or path.is_symlink() or not path.is_dir():
        if path.exists() or path.is_symlink():
            rmtree_force(path)
        return
    for entry in os.scandir(path):
        rmtree_force(Path(entry.path))


__all__ = ["DEFAULT_IMAGE", "DockerSandbox", "SYSTEM_PATH", "image_name", "reap", "unavailable_reason"]
