"""What a layer is (sandbox.layers): its spec, its key, the cache it lives in, and the argv
commands its builds run (never a shell)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sandbox.base import SandboxError

KINDS = ("apt", "pip")
FORMAT = 3
"""Layout version of a layer dir; part of the key, so a change of layout never reuses old ones."""
MANIFEST = "manifest.json"
"""Where an apt layer lists its packages (one a line, `KEY.list`): the offline apt-get stand-in
(sandbox/offline_tools.py) reads them, so a later `apt-get install` of a layered package succeeds."""
_APT_NAME = re.compile(r"^[a-z0-9][a-z0-9+.\-]{0,99}(:(amd64|arm64|all|i386))?(=[A-Za-z0-9.+~:\-]{1,80})?$")
_PIP_SPEC = r"(===?|~=|!=|<=?|>=?)[A-Za-z0-9.*+!_\-]{1,60}"
_PIP_REQ = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._\-]{0,99})(\[[A-Za-z0-9._\-]+(,[A-Za-z0-9._\-]+)*\])?"
                      rf"({_PIP_SPEC}(,{_PIP_SPEC})*)?$")
BUILD_TIMEOUT_S = 600.0


def max_download_bytes() -> int:
    """Most bytes one layer may fetch ($CLAWLOOP_LAYER_MAX_MB, default 1024): a Dockerfile that
    installs a desktop suite is a skip naming the size, not a download that fills the disk."""
    return int(float(os.environ.get("CLAWLOOP_LAYER_MAX_MB", "1024")) * 2**20)


class LayerError(SandboxError):
    """A layer cannot be built: a refused name, a package the registry lacks, a failed fetch."""


@dataclasses.dataclass(frozen=True)
class LayerSpec:
    """What a layer holds: packages of one registry, as the Dockerfile named them."""

    kind: str
    """"apt" or "pip"."""
    packages: tuple[str, ...]
    """apt: `name`, `name=version`, `name:arch`; pip: a requirement `name[extra]==1.0`."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise LayerError(f"layer kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        if not self.packages:
            raise LayerError(f"{self.kind} layer: no packages")
        pattern = _APT_NAME if self.kind == "apt" else _PIP_REQ
        for p in self.packages:
            if not isinstance(p, str) or not pattern.fullmatch(p):
                raise LayerError(f"{self.kind} package {p!r}: not a plain package name (refused)")
        object.__setattr__(self, "packages", tuple(sorted(set(self.packages))))

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "packages": list(self.packages)}

    @classmethod
    def from_json(cls, obj: object) -> LayerSpec:
        if not isinstance(obj, dict) or not isinstance(obj.get("packages"), list | tuple):
            raise LayerError(f"layer spec {obj!r}: expected {{kind, packages}}")
        return cls(str(obj.get("kind")), tuple(obj["packages"]))


@dataclasses.dataclass(frozen=True)
class Layer:
    """A built layer in the cache."""

    key: str
    path: Path
    manifest: dict[str, object]

    @property
    def kind(self) -> str:
        return str(self.manifest["kind"])

    @property
    def tree(self) -> Path:
        """The files: apt → a root (usr/, etc/), pip → a prefix laid over the runtime (bin/, lib/)."""
        return self.path / "tree"


def cache_root() -> Path:
    """$CLAWLOOP_LAYER_CACHE, else $XDG_CACHE_HOME/clawloop/layers, else ~/.cache/clawloop/layers."""
    env = os.environ.get("CLAWLOOP_LAYER_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "clawloop" / "layers"


# ------------------------------------------------------------------------------ identity / key
def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def dpkg_identity() -> str:
    """The host's installed packages (name:arch=version), hashed: what an apt closure subtracts."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${binary:Package}=${Version}\\n"],
                             capture_output=True, text=True, timeout=60, check=False, env=_clean_env()).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise LayerError(f"apt layers need dpkg on the host ({e})") from None
    lines = sorted(w[1] for w in map(str.split, out.splitlines()) if len(w) == 2 and w[0] == "ii")
    if not lines:
        raise LayerError("apt layers need dpkg on the host (dpkg-query listed nothing)")
    return "dpkg:" + sha256_hex("\n".join(lines).encode())[:32]


def runtime_identity(runtime_dir: Path) -> str:
    """The runtime's interpreter version and distributions, hashed: what a pip layer builds on."""
    dists = sorted(p.name for site in runtime_dir.glob("lib/python*/site-packages") for p in site.iterdir()
                   if p.name.endswith(".dist-info"))
    py = sorted(p.name for p in runtime_dir.glob("lib/python*"))
    return "runtime:" + sha256_hex("\n".join([*py, *dists]).encode())[:32]


def layer_key(spec: LayerSpec, identity: str) -> str:
    """The cache key: sha256 of the canonical JSON of (format, kind, packages, base identity)."""
    blob = json.dumps({"format": FORMAT, **spec.to_json(), "base": identity}, sort_keys=True,
                      separators=(",", ":")).encode()
    return f"{spec.kind}-{sha256_hex(blob)[:24]}"


def identity_for(spec: LayerSpec, runtime_dir: Path | None) -> str:
    if spec.kind == "apt":
        return dpkg_identity()
    if runtime_dir is None:
        raise LayerError("pip layers need the task runtime (run scripts/setup.sh)")
    return runtime_identity(runtime_dir)


# ---------------------------------------------------------------------------------- commands
def _clean_env(home: str | None = None) -> dict[str, str]:
    """PATH, locale and the pip index settings only: nothing else of the caller reaches a build."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL": "C", "LANG": "C"}
    env.update({k: v for k, v in os.environ.items() if k.startswith(("PIP_", "http_", "https_", "no_proxy",
                                                                     "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"))})
    if home:
        env["HOME"] = home
    return env


def builder_uid() -> tuple[int, int] | None:
    """(uid, gid) the build steps run as when the caller is root (the sandbox uid), else None."""
    if os.geteuid() != 0:
        return None
    uid = int(os.environ.get("CLAWLOOP_SANDBOX_UID", "65534"))
    return uid, int(os.environ.get("CLAWLOOP_SANDBOX_GID", str(uid)))


def run_argv(argv: list[str], cwd: Path, *, timeout: float = BUILD_TIMEOUT_S, env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
    who = builder_uid()
    kw: dict[str, object] = {"user": who[0], "group": who[1], "extra_groups": []} if who else {}
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
                              env=env or _clean_env(str(cwd)), **kw)  # type: ignore[arg-type]
    except subprocess.TimeoutExpired:
        raise LayerError(f"{argv[0]} {argv[1] if len(argv) > 1 else ''}: timed out after {timeout:g} s") from None
    except OSError as e:
        raise LayerError(f"{argv[0]}: {e}") from None


@contextlib.contextmanager
def build_workdir() -> Iterator[Path]:
    """A private temp dir the builder uid owns (outside the cache: root's home is not reachable)."""
    d = Path(tempfile.mkdtemp(prefix="clawloop-layer-build-"))
    try:
        who = builder_uid()
        if who:
            os.chown(d, *who)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def tail_lines(text: str, n: int = 3) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return " | ".join(lines[-n:])[:400]


