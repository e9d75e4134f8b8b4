"""What every isolated sandbox looks like inside: environment, limits, /etc, writable dirs."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from sandbox._paths import sandbox_path, state_prefix
from sandbox.base import ClosedOnExit, SandboxConfig, SandboxError

RUNTIME_MOUNT = "/opt/clawloop-runtime"
"""Where the task runtime (a python venv) appears inside a sandbox, read-only."""
PYGUARD_MOUNT = "/opt/clawloop-pyguard"
"""Where every isolated sandbox shows sandbox/_pyguard.py as `sitecustomize.py`, read-only from
its creation on (docker cannot add a mount later): the verifier's pythons load it through
PYTHONPATH, and no process inside can change it."""

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

WRITABLE_TOPS = ("root", "home", "tmp", "var", "logs", "srv", "opt")
"""Top-level directories that are private and writable in every sandbox (besides the workspace).
Others (/app, /data, /mnt...) appear on demand when `write_file` or `mount` creates them.
Each is one bind mount per command: keep the list short."""

RESERVED_TOPS = frozenset({"usr", "etc", "proc", "dev", "sys", "bin", "sbin", "lib", "lib32", "lib64",
                           "libx32", "boot"})
"""Top-level names that belong to the read-only system view."""

HOSTNAME = "sandbox"

_PASSWD = """root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
"""
"""The accounts every image starts with, and no more: uid and gid 1000 stay free, as in a Debian or
python image, so a Dockerfile's `RUN useradd -m -u 1000 agent` makes its user (with a `user`
account at 1000 here, it exited 4: "UID 1000 is not unique")."""
_GROUP = "root:x:0:\nnogroup:x:65534:\n"
_HOSTS = f"127.0.0.1\tlocalhost {HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n"
# Files only: no resolv.conf and no `dns` source, so name lookups fail fast instead of timing out.
_NSSWITCH = "".join(f"{db}:\tfiles\n" for db in
                    ("passwd", "group", "shadow", "hosts", "networks", "protocols", "services"))

_PAM_ROOT_ONLY = ("auth\tsufficient\tpam_rootok.so\nauth\trequired\tpam_deny.so\n"
                  "account\trequired\tpam_permit.so\npassword\trequired\tpam_deny.so\n"
                  "session\trequired\tpam_permit.so\n")
PAM_CONFIGS = {**{f"pam.d/{svc}": _PAM_ROOT_ONLY for svc in ("su", "su-l", "runuser", "runuser-l", "chfn", "chsh")},
               "pam.d/other": "".join(f"{k}\trequired\tpam_deny.so\n" for k in ("auth", "account", "password",
                                                                                   "session"))}
"""PAM services of the tools that switch users, as a Debian image has them, less the password
stacks: root may `su`/`runuser` to any user and adduser's `chfn` works (the sandbox has no
passwords); anything else is denied. Without a config these tools abort ("Critical error"). Only
the host's own modules by name; a verifier reads /etc as the task's setup left it (`freeze_etc`),
never the agent's pam.d."""

# Host /etc entries copied into the sandbox's /etc; everything else (shadow, ssh keys,
# resolv.conf, credentials of host tools) stays invisible.
_ETC_COPY = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "ssl/openssl.cnf",
    "ca-certificates.conf", "bash.bashrc", "profile", "inputrc", "mime.types", "magic",
    "magic.mime", "protocols", "services", "os-release", "debian_version", "lsb-release",
    "login.defs", "gai.conf", "host.conf", "gitconfig",
)
# Directories mostly of symlinks (alternatives: awk -> mawk...); copied with `_copy_tree`.
_ETC_TREES = ("alternatives", "ssl/certs", "terminfo", "perl", "ca-certificates")


def base_env(config: SandboxConfig, runtime: bool, home: str = "/root") -> dict[str, str]:
    """The complete environment of a sandboxed command: nothing is inherited from the host."""
    path = f"{RUNTIME_MOUNT}/bin:{SYSTEM_PATH}" if runtime else SYSTEM_PATH
    env = {"PATH": path, "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb", "USER": "root",
           "LOGNAME": "root", "HOSTNAME": HOSTNAME}
    env.update(config.env)
    return env


def ulimit_prefix(config: SandboxConfig) -> str:
    """Shell line setting the per-command rlimits (hard limits too, so they cannot be raised).

    Set inside the sandbox, after the user namespace exists: set on bwrap itself, RLIMIT_NPROC
    would also cap the namespace's parent and so all sandboxes of the host uid together.
    bash units: -v and -f in KiB, -t in seconds. The CPU hard limit is one second above the soft
    one so that a command first gets a catchable SIGXCPU (exit 152), then SIGKILL.
    """
    cpu = config.cpu_seconds
    return (f"ulimit -v {config.memory_mb * 1024} -f {config.max_file_size_mb * 1024} "
            f"-u {config.max_processes} && ulimit -S -t {cpu} && ulimit -H -t {cpu + 1} || exit 125\n")


LONG_COMMAND = 64 * 1024
"""Commands longer than this (bytes) go through a file: one exec argument is limited to 128 KiB."""


def shell_script(config: SandboxConfig, command: str, command_file: str | None = None) -> str:
    """The `bash -c` script: rlimits, then the command itself or `. FILE` for a long one."""
    return ulimit_prefix(config) + (f". {command_file}" if command_file else command)


def check_workspace(workspace: str) -> str:
    """Normalise the configured workspace path; refuse the root and system directories."""
    ws = sandbox_path(workspace)
    top = ws.strip("/").split("/")[0]
    if ws == "/" or top in RESERVED_TOPS or ws == RUNTIME_MOUNT or ws.startswith(RUNTIME_MOUNT + "/"):
        raise SandboxError(f"workspace {workspace!r} must not be / or inside a system directory")
    return ws


def venv_origin(runtime_dir: Path) -> str | None:
    """The absolute path a venv was created at (its scripts' shebangs point there), if known."""
    for name in ("pip", "pip3", "pytest"):
        script = runtime_dir / "bin" / name
        try:
            with open(script, "rb") as f:
                first = f.readline(4096)
        except OSError:
            continue
        if first.startswith(b"#!/"):
            interp = first[2:].strip().split()[0].decode(errors="replace")
            if os.path.basename(interp) == "env":  # `#!/usr/bin/env python3`: relocatable already
                return None
            return os.path.dirname(os.path.dirname(interp))
    return None


PYTEST_PLUGINS_MODULE = "clawloop_pytest_plugins"
"""A module of PYGUARD_MOUNT that a verifier's pytest loads (PYTEST_PLUGINS) with plugin autoload
off: it names the pytest plugins of the interpreter's own site-packages only (sandbox/_pyguard.py)."""
_PLUGINS_SOURCE = """# pytest plugins of the interpreter's own site-packages, never of the cwd (sandbox/_pyguard.py)
from sitecustomize import own_pytest_plugins
pytest_plugins = own_pytest_plugins()
"""


SEAL_SCRIPT = f"{PYGUARD_MOUNT}/clawloop_seal.py"
"""sandbox/_seal.py inside every isolated sandbox: `python3 -I -S SEAL_SCRIPT DIR CMD...` runs CMD
unable to create FIFOs, sockets, device nodes or symlinks in DIR (Landlock, where the kernel has it)."""


def pyguard_dir(parent: Path) -> Path:
    """A fresh `parent/pyguard` holding the import guard as sitecustomize.py, the pytest plugin
    list and the seal (SEAL_SCRIPT), readable by all, writable by none: the host side of
    PYGUARD_MOUNT."""
    d = parent / "pyguard"
    d.mkdir()
    here = Path(__file__).parent
    for name, data in (("sitecustomize.py", (here / "_pyguard.py").read_bytes()),
                       (PYTEST_PLUGINS_MODULE + ".py", _PLUGINS_SOURCE.encode()),
                       (SEAL_SCRIPT.rsplit("/", 1)[1], (here / "_seal.py").read_bytes())):
        f = d / name
        f.write_bytes(data)
        f.chmod(0o444)
    d.chmod(0o555)
    return d


def check_runtime(runtime_dir: Path | None) -> Path | None:
    if runtime_dir is None:
        return None
    rt = Path(runtime_dir).resolve()
    if not (rt / "bin").is_dir():
        raise SandboxError(f"runtime_dir {runtime_dir}: not a python venv (no bin/)")
    return rt


class Backend(ClosedOnExit):
    """What every backend sets up before its own layout: the config, the checked workspace and
    runtime, a lock around its state, and whether it is closed."""

    state_dir: Path
    """The host dir of the sandbox's own files, deleted at close (each backend makes it)."""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self._workspace = check_workspace(config.workspace)
        self._runtime = check_runtime(config.runtime_dir)
        self._lock = threading.Lock()
        self._closed = False

    def _storage(self) -> Path:
        """Where `scratch_dir` makes its dirs: the state dir (bwrap: its disk quota)."""
        return self.state_dir

    def scratch_dir(self, prefix: str) -> Path:
        """A new empty host dir in the sandbox's storage, traversable by the sandbox uid."""
        with self._lock:
            if self._closed:
                raise SandboxError("sandbox is closed")
            d = Path(tempfile.mkdtemp(prefix=prefix, dir=self._storage()))
        d.chmod(0o755)
        return d

    @contextlib.contextmanager
    def trusted_root(self) -> Iterator[None]:
        """The system as commands see it already (docker: a read-only image; local: the host's)."""
        yield

    def freeze_etc(self) -> None:
        """Nothing to freeze where commands see the image's or the host's /etc as it is."""


_ETC_TEMPLATE_LOCK = threading.Lock()


def etc_template() -> Path:
    """A minimal /etc built once per process, shared read-only by sandboxes (under a lock: threads
    opening their first sandboxes at once built one copy each, 4 dirs for one evaluation)."""
    with _ETC_TEMPLATE_LOCK:
        return _build_etc_template()


@functools.cache
def _build_etc_template() -> Path:
    d = Path(tempfile.mkdtemp(prefix=state_prefix("etc")))
    os.chmod(d, 0o755)
    atexit.register(shutil.rmtree, d, True)
    for name, text in (("passwd", _PASSWD), ("group", _GROUP), ("hosts", _HOSTS),
                       ("hostname", HOSTNAME + "\n"), ("nsswitch.conf", _NSSWITCH)):
        (d / name).write_text(text)
        os.chmod(d / name, 0o644)
    (d / "pam.d").mkdir()
    for name, text in PAM_CONFIGS.items():
        (d / name).write_text(text)
        os.chmod(d / name, 0o644)
    pythons = sorted(n for n in os.listdir("/etc") if n.startswith("python3"))
    for name in dict.fromkeys((*_ETC_COPY, *_ETC_TREES, *pythons)):
        src = Path("/etc") / name
        dst = d / name
        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir() and not src.is_symlink():
                _copy_tree(src, dst)
            elif src.is_symlink() or (src.is_file() and src.stat().st_mode & 0o004):
                _copy_entry(src, dst)
        except OSError:
            continue  # a missing or unreadable entry only makes the sandbox's /etc smaller
    for sub in d.rglob("*"):
        if sub.is_dir() and not sub.is_symlink():
            os.chmod(sub, 0o755)
    return d


def _copy_entry(src: Path, dst: Path) -> None:
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
    else:
        shutil.copyfile(src, dst)
        os.chmod(dst, 0o644)


def _copy_tree(src: Path, dst: Path) -> None:
    """Copy symlinks as symlinks and world-readable files only (no metadata: it is slow)."""
    dst.mkdir(exist_ok=True)
    with os.scandir(src) as it:
        for e in it:
            s, t = Path(e.path), dst / e.name
            if e.is_symlink():
                os.symlink(os.readlink(s), t)
            elif e.is_dir():
                if e.stat().st_mode & 0o005 == 0o005:
                    _copy_tree(s, t)
            elif e.is_file() and e.stat().st_mode & 0o004:
                _copy_entry(s, t)


def reachable_by(path: Path, uid: int) -> bool:
    """Can `uid` (not root) traverse to `path` and read it? Checks owner and other bits only."""
    p = Path(path).resolve()
    chain = [*reversed(p.parents), p]
    for i, d in enumerate(chain):
        try:
            st = d.stat()
        except OSError:
            return False
        need = 0o5 if i == len(chain) - 1 else 0o1
        owner_ok = st.st_uid == uid and (st.st_mode >> 6) & need == need
        if not owner_ok and st.st_mode & need != need:
            return False
    return True
