"""What this host lets bwrap do: where its binary is, which version, which uid it runs as.

The process limit: RLIMIT_NPROC is not enforced for processes whose real uid is host root, even
inside a user namespace (the kernel exempts INIT_USER). So when clawloop runs as root, bwrap
itself is started as an unprivileged host uid (`CLAWLOOP_SANDBOX_UID`, default 65534 "nobody")
and maps it to uid 0 inside; the limit is then enforced, and counted per sandbox because each
container gets its own user namespace. If unprivileged user namespaces are unavailable, bwrap
runs as root and `process_limit_enforced` is False (`clawloop sandbox doctor` says so).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

from sandbox.base import SandboxError


def find_bwrap() -> str:
    """Path of the bwrap binary (`CLAWLOOP_BWRAP` overrides the PATH lookup)."""
    explicit = os.environ.get("CLAWLOOP_BWRAP")
    found = explicit if explicit and os.access(explicit, os.X_OK) else None
    if not explicit:
        found = shutil.which("bwrap")
    if not found:
        raise SandboxError(
            f"bubblewrap not found ({explicit or 'bwrap on PATH'}): install it "
            "(apt-get install bubblewrap) or use --backend docker|local")
    return found


@functools.cache
def bwrap_version(bwrap: str) -> tuple[int, ...]:
    """(major, minor, patch) of the bwrap binary; (0,) when unknown."""
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout
        return tuple(int(x) for x in out.split()[-1].split("."))
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return (0,)


@dataclass(frozen=True)
class HostIdentity:
    """Which host uid bwrap runs as, and what that means for the process limit."""

    run_as: tuple[int, int] | None
    """(uid, gid) bwrap is started as; None: the calling user."""
    process_limit_enforced: bool
    note: str


@functools.cache
def host_identity(bwrap: str) -> HostIdentity:
    """Decide (once per process) how to run bwrap so that RLIMIT_NPROC is enforced."""
    if os.geteuid() != 0:
        return HostIdentity(None, True, f"bwrap runs as uid {os.geteuid()}")
    uid = int(os.environ.get("CLAWLOOP_SANDBOX_UID", "65534"))
    gid = int(os.environ.get("CLAWLOOP_SANDBOX_GID", str(uid)))
    probe = [bwrap, "--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0",
             "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
             "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "true"]
    try:
        r = subprocess.run(probe, env={}, user=uid, group=gid, extra_groups=[],
                           capture_output=True, timeout=20)
        ok, why = r.returncode == 0, r.stderr.decode(errors="replace").strip()
    except (OSError, subprocess.SubprocessError) as e:
        ok, why = False, str(e)
    if ok:
        return HostIdentity((uid, gid), True, f"running as root: bwrap drops to host uid {uid}")
    return HostIdentity(None, False, "running as root and bwrap cannot run as an unprivileged uid "
                        f"({why or 'no user namespaces'}): the process limit is NOT enforced")
