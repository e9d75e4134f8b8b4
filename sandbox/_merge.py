"""What a bwrap container needs beyond bwrap 0.8's options: read-only layers merged under its
system dirs, and a user namespace with a range of uids.

Layers: this host's bubblewrap (0.8) has no `--overlay`, but the kernel lets a private mount
namespace mount overlayfs. Each container is started through a wrapper: `unshare --mount` (as
root; as another user `unshare --user --map-root-user --mount`), in which a read-only overlay of
the layers over the host's /usr (or over the task runtime) is mounted on an empty dir of the
sandbox's state, then bwrap binds that dir as it binds /usr today. The overlay exists only in
that mount namespace: it never shows on the host and dies with the container.

Uids: bwrap's own user namespace maps one uid (the sandbox's root), so `setuid(1000)` inside is
EINVAL. `UserNs` makes a user namespace the sandbox uid owns, with the host (root) writing a map
of a range: inside 0 → the sandbox uid, inside 1..65535 → a range of unused host uids; nested
user namespaces are disabled in it (max_user_namespaces = 0, what `--disable-userns` does).
bwrap joins it (`--userns FD`) and gives the container's root the capabilities a Docker
container's root has for switching users and owning files (CAP_SETUID, CAP_CHOWN, ...), which
count only inside that namespace: host files stay owned by unmapped ids (read-only to it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from sandbox.base import SandboxError

_UNSHARE = shutil.which("unshare", path="/usr/bin:/bin:/usr/sbin:/sbin")
_NSENTER = shutil.which("nsenter", path="/usr/bin:/bin:/usr/sbin:/sbin")
_BASH = shutil.which("bash", path="/usr/bin:/bin")
USERNS_ARG = "@CLAWLOOP_USERNS_FD@"
"""Placeholder of bwrap's --userns argument: the wrapper opens the namespace and substitutes its fd."""
UID_RANGE = 65535
"""Inside uids 1..UID_RANGE are mapped (nobody, 65534, included)."""
CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETUID", "CAP_SETGID",
        "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT")
"""Docker's default capabilities of a container's root that switching users and owning files
need (no CAP_SYS_ADMIN, CAP_NET_RAW, CAP_MKNOD, CAP_SETFCAP)."""
FILE_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID")
"""What root in every bwrap sandbox keeps, as root in a Docker container does: writing its own
0444 files (`shutil.copy` of a read-only original, then rewriting it, as public Harbor tests do).
With one uid mapped they act on the sandbox's own files only: every host file (/usr, the runtime,
layers, /tests) is owned by an unmapped uid, which a namespace's capabilities never override."""
_BAD_PATH = set(":,\\ \n\t'\"$`")


def overlay_path_ok(path: Path) -> bool:
    """Can `path` be named in an overlay lowerdir option (no `:`, `,`, spaces or quotes)?"""
    return not (_BAD_PATH & set(str(path)))


def unshare_available() -> str | None:
    """Why containers cannot be wrapped here (None: they can)."""
    if _UNSHARE is None or _BASH is None:
        return "util-linux unshare and bash are needed to merge layers"
    return None


def wrap(argv: list[str], overlays: dict[Path, list[Path]], userns_pid: int | None) -> list[str]:
    """`argv` (setpriv + bwrap + ...) started in a private mount namespace with `overlays`
    (mount point → lower dirs, top first) mounted read-only, and the user namespace of
    `userns_pid` opened for bwrap's `--userns`."""
    if _UNSHARE is None or _BASH is None:
        raise SandboxError(unshare_available() or "unshare")
    steps = []
    for target, lowers in overlays.items():
        for p in (target, *lowers):
            if not overlay_path_ok(p):
                raise SandboxError(f"layer path {p}: has a character an overlay option cannot hold")
        steps.append(f"mount -t overlay clawloop-layers -o ro,lowerdir={':'.join(map(str, lowers))} {target}")
    if userns_pid is not None:
        steps.append(f"exec {{ns}}</proc/{int(userns_pid)}/ns/user")
        steps.append(f'exec "${{@/#{USERNS_ARG}/$ns}}"')
    else:
        steps.append('exec "$@"')
    outer = [_UNSHARE, "--mount", "--propagation", "private"] if os.geteuid() == 0 else \
        [_UNSHARE, "--user", "--map-root-user", "--mount", "--propagation", "private"]
    return [*outer, "--", _BASH, "-c", " && ".join(steps), "clawloop-wrap", *argv]


def with_userns(argv: list[str], bwrap: str) -> list[str]:
    """bwrap's argv joining the wrapper's user namespace instead of making its own."""
    i = argv.index(bwrap)
    out = argv[:i + 1]
    rest = argv[i + 1:]
    for j, a in enumerate(rest):
        if a == "--unshare-all":
            out += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                    "--userns", USERNS_ARG, *[x for c in CAPS for x in ("--cap-add", c)]]
        elif a in ("--unshare-user", "--disable-userns"):
            continue
        elif a in ("--bind", "--ro-bind"):  # the options this rewrites all come before the binds
            return out + rest[j:]
        else:
            out.append(a)
    return out


def with_caps(argv: list[str], bwrap: str, caps: tuple[str, ...]) -> list[str]:
    """bwrap's argv with `--cap-add` of `caps` for the sandbox's root."""
    i = argv.index(bwrap)
    return [*argv[:i + 1], *[x for c in caps for x in ("--cap-add", c)], *argv[i + 1:]]


class UserNs:
    """A user namespace owned by `owner` (the sandbox uid) with inside 0 → owner and inside
    1..UID_RANGE → host `base+1`...; held by a helper process until `close`."""

    def __init__(self, owner: tuple[int, int], base: int) -> None:
        if os.geteuid() != 0:
            raise SandboxError("several uids need clawloop to run as root (it writes the uid map)")
        if _UNSHARE is None or _NSENTER is None:
            raise SandboxError("several uids need util-linux unshare and nsenter")
        uid, gid = owner
        # The helper holds the namespace; EOF on its stdin (this process gone) ends it.
        self._proc = subprocess.Popen(
            ["setpriv", "--reuid", str(uid), "--regid", str(gid), "--clear-groups", _UNSHARE, "--user", "--",
             "/bin/sh", "-c", "echo ready; read _"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})
        try:
            assert self._proc.stdout is not None
            line = self._proc.stdout.readline()
            if line != b"ready\n":
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise SandboxError(f"cannot make a user namespace: {err.strip() or 'helper died'}")
            pid = self.pid = self._proc.pid
            for name, own in (("uid_map", uid), ("gid_map", gid)):
                if name == "gid_map":
                    Path(f"/proc/{pid}/setgroups").write_text("allow")
                Path(f"/proc/{pid}/{name}").write_text(f"0 {own} 1\n1 {base + 1} {UID_RANGE}\n")
            r = subprocess.run([_NSENTER, "--target", str(pid), "--user", "--", "/bin/sh", "-c",
                                "echo 0 > /proc/sys/user/max_user_namespaces"], capture_output=True, timeout=20,
                               env={"PATH": "/usr/bin:/bin"})
            if r.returncode != 0:
                raise SandboxError("cannot disable nested user namespaces: "
                                   + r.stderr.decode(errors="replace").strip()[:200])
        except (OSError, subprocess.SubprocessError) as e:
            self.close()
            raise SandboxError(f"cannot make a user namespace: {e}") from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        p = self._proc
        if p.poll() is None:
            p.kill()
        p.wait()
        for f in (p.stdin, p.stdout, p.stderr):
            if f is not None:
                f.close()


def uid_base() -> int:
    """Host uid below the range inside uids 1..UID_RANGE map to: $CLAWLOOP_SANDBOX_SUBUID, else
    the `clawloop` entry of /etc/subuid, else 1,000,000,000 (far above any real account)."""
    env = os.environ.get("CLAWLOOP_SANDBOX_SUBUID")
    if env:
        return int(env) - 1
    try:
        for line in Path("/etc/subuid").read_text().splitlines():
            name, _, rest = line.partition(":")
            start, _, count = rest.partition(":")
            if name == "clawloop" and int(count) >= UID_RANGE:
                return int(start) - 1
    except (OSError, ValueError):
        pass
    return 1_000_000_000 - 1
