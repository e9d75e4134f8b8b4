"""InterCode-Bash's file systems: each setup script run once in an isolated sandbox, what it made
archived (tar.gz, files re-dated to a sentinel, and so the members and gzip headers of the
archives the script made: fs 2 and 3 make one with `tar -czf`, whose bytes would otherwise carry
the build's clock into every task's id) and cached by content hash, then extracted into
every sandbox of its tasks (`restore_command`), so the agent's run and the gold run start
byte-identical. The whole story: clawloop.core.tasks.intercode."""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import os
import shlex
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import sandbox
from clawloop.core.tasks import intercode_reward as icr
from clawloop.core.tasks.shell_lite import default_runtime_dir
from clawloop.core.tasks.task import Task
from clawloop.core.tasks.verifier import host_mounts, read_logs_file
from clawloop.errors import ClawloopError
from sandbox.base import SandboxConfig, SandboxError

SNAPSHOT = "/opt/clawloop-intercode/fs.tar.gz"
"""Where the task's file-system archive is written before its setup extracts (and deletes) it."""
SENTINEL = 946684800
"""mtime (2000-01-01T00:00:00Z) of what the setup script made, in the archive."""
BUILDER_VERSION = 2
"""Part of the cache key: a change to the build gives new archives."""
CACHE_ENV = "CLAWLOOP_INTERCODE_CACHE"
SNAPSHOT_MAX_BYTES = 64 << 20
BUILD_TIMEOUT_S = 300.0
_EOF = "CLAWLOOP_INTERCODE_EOF"


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "clawloop" / "intercode"


def snapshot_key(script: bytes, fs: int) -> str:
    h = hashlib.sha256(f"intercode-fs v{BUILDER_VERSION} fs{fs}\0".encode())
    h.update(script)
    return h.hexdigest()[:16]


_BUILD = r'''
import gzip, io, json, os, stat, subprocess, sys, tarfile, time
out, script, sentinel = sys.argv[1], sys.argv[2], int(sys.argv[3])
skip = set(json.loads(sys.argv[4]))
ARCHIVES = (".tar", ".tar.gz", ".tgz", ".gz")
t0 = int(time.time()) - 1
with open(os.path.join(out, "setup.log"), "wb") as log:
    status = subprocess.run(["/bin/bash", "/" + script], cwd="/", stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT).returncode
roots = []
for name in sorted(os.listdir("/")):
    st = os.lstat("/" + name)
    if name in skip or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        continue
    if stat.S_ISDIR(st.st_mode) and not os.listdir("/" + name):
        continue
    roots.append(name)
def tree(rel):
    yield rel
    full = "/" + rel
    if os.path.isdir(full) and not os.path.islink(full):
        for n in sorted(os.listdir(full)):
            yield from tree(rel + "/" + n)
def redate_member(ti):
    if ti.mtime >= t0:
        ti.mtime = sentinel
    return ti
def normalize_archive(path):
    # An archive the script made holds the build's clock (member mtimes, gzip's header): dated
    # at the sentinel like every file, so that two builds give the same bytes.
    with open(path, "rb") as f:
        data = f.read()
    zipped = data[:2] == b"\x1f\x8b"
    try:
        raw = gzip.decompress(data) if zipped else data
    except (OSError, EOFError):
        return  # not gzip inside: kept as made
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as src:
            out = io.BytesIO()
            with tarfile.open(fileobj=out, mode="w", format=src.format or tarfile.GNU_FORMAT) as dst:
                for m in sorted(src.getmembers(), key=lambda m: m.name):  # not the build fs's readdir order
                    dst.addfile(redate_member(m), src.extractfile(m) if m.isreg() else None)
            raw = out.getvalue()
    except (OSError, EOFError, tarfile.TarError, ValueError):
        if not zipped:
            return  # not a tar: kept as made
    if zipped:
        raw = gzip.compress(raw, compresslevel=6, mtime=0)
    with open(path, "wb") as f:
        f.write(raw)
paths = [p for r in roots for p in tree(r)]
for p in paths:
    st = os.lstat("/" + p)
    if st.st_mtime >= t0:
        if stat.S_ISREG(st.st_mode) and p.endswith(ARCHIVES):
            normalize_archive("/" + p)
            os.chmod("/" + p, stat.S_IMODE(st.st_mode))
        os.utime("/" + p, (sentinel, sentinel), follow_symlinks=False)
buf = io.BytesIO()
with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, \
        tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
    for p in paths:
        ti = tar.gettarinfo("/" + p, arcname=p)
        if ti is None:
            continue
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = "root"
        if ti.isreg():
            with open("/" + p, "rb") as f:
                tar.addfile(ti, f)
        else:
            tar.addfile(ti)
with open(os.path.join(out, "fs.tar.gz"), "wb") as f:
    f.write(buf.getvalue())
with open(os.path.join(out, "meta.json"), "w") as f:
    json.dump({"roots": roots, "status": status}, f)
'''


def _isolated_backend(backend: str | None) -> str:
    if backend == "local":
        raise ClawloopError("InterCode's setup scripts write to /: building them needs an isolated backend "
                            "(bwrap or docker), not local")
    tried = [backend] if backend else ["bwrap", "docker"]
    reasons = []
    for b in tried:
        why = sandbox.unavailable_reason(b)
        if why is None:
            return b
        reasons.append(f"{b}: {why}")
    raise ClawloopError("building InterCode's file systems needs an isolated sandbox (" + "; ".join(reasons) + ")")


def build_snapshot(script: bytes, fs: int, *, backend: str | None = None) -> tuple[bytes, list[str]]:
    """Run the setup script of file system `fs` in a fresh sandbox (cwd /, the Dockerfile's env)
    and archive what it made: (tar.gz bytes, top-level names). ClawloopError when it fails."""
    name = f"setup_nl2b_fs_{fs}.sh"
    backend = _isolated_backend(backend)
    target = "/logs/clawloop-intercode-build"
    skip = sorted(icr.IGNORED | icr.INFRA)
    cmd = (f"python3 -I -S - {target} {name} {SENTINEL} {shlex.quote(json.dumps(skip))} <<'{_EOF}'\n"
           f"{_BUILD}\n{_EOF}\n")
    try:
        with sandbox.open(backend, config=SandboxConfig(runtime_dir=default_runtime_dir())) as sb:
            sb.write_file(f"/{name}", script, 0o755)  # as the Dockerfile's COPY puts it
            d = sb.scratch_dir("intercode-build-")
            with host_mounts(sb, {target: d}):
                r = sb.exec(cmd, timeout=BUILD_TIMEOUT_S, cwd="/",
                            env={"file_system_version": str(fs), "script": name})
                meta_raw = read_logs_file(d, "meta.json", 1 << 20)
                data = read_logs_file(d, "fs.tar.gz", SNAPSHOT_MAX_BYTES)
                log = (read_logs_file(d, "setup.log", 1 << 20) or b"").decode(errors="replace")
    except SandboxError as e:
        raise ClawloopError(f"{name}: cannot build its file system ({e})") from None
    if meta_raw is None or data is None:
        last = (r.output.strip().splitlines() or [""])[-1][:200]
        raise ClawloopError(f"{name}: the file-system build failed (exit status {r.exit_code}) {last}".rstrip())
    meta = json.loads(meta_raw)
    if meta["status"] != 0:  # docker build's RUN /script fails on a non-zero exit
        last = (log.strip().splitlines() or [""])[-1][:200]
        raise ClawloopError(f"{name}: exited with status {meta['status']} ({last})")
    return data, list(meta["roots"])


def snapshot(script: bytes, fs: int, *, backend: str | None = None) -> tuple[str, bytes, list[str]]:
    """(key, archive, roots) of file system `fs` built by `script`, from the cache when there."""
    key = snapshot_key(script, fs)
    d = cache_dir()
    arch, meta = d / f"{key}.tar.gz", d / f"{key}.json"
    if arch.is_file() and meta.is_file():
        try:
            return key, arch.read_bytes(), list(json.loads(meta.read_text())["roots"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    data, roots = build_snapshot(script, fs, backend=backend)
    d.mkdir(parents=True, exist_ok=True)
    for path, blob in ((arch, data), (meta, json.dumps({"roots": roots, "fs": fs}).encode())):
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    return key, data, roots


def restore_command(roots: list[str]) -> str:
    """The task's setup: refuse the local backend, extract the archive into /, delete it, and
    re-date what the script made to midnight UTC of the day before."""
    guard = ('if [ -n "${SANDBOX_ROOT:-}" ]; then\n'
             '  echo "intercode: this task rewrites / (on the local backend, the host\'s): use bwrap or docker" >&2\n'
             "  exit 1\nfi")
    if not roots:
        return guard
    starts = " ".join(shlex.quote("/" + r) for r in roots)
    return (f"{guard}\ntar -xzpf {SNAPSHOT} -C / && rm -rf {os.path.dirname(SNAPSHOT)} || exit 1\n"
            "day=$(( $(date -u +%s) / 86400 * 86400 - 86400 ))\n"
            f"find {starts} -newermt @{SENTINEL - 1} ! -newermt @{SENTINEL} -exec touch -h -d \"@$day\" {{}} + "
            "2>/dev/null\ntrue")


@functools.lru_cache(maxsize=16)
def _baseline(archive: bytes) -> dict[str, list[Any]]:
    """The file system right after the setup, as the walker lists it (files and links: what
    InterCode's initial commit holds)."""
    state: dict[str, list[Any]] = {}
    data: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(archive)), mode="r:") as tar:
        for m in tar.getmembers():
            name = m.name.rstrip("/")
            parts = name.split("/")
            if any(p in icr.IGNORED for p in parts) or parts[0] in icr.INFRA:
                continue
            if m.isdir():
                state[name] = ["d"]
            elif m.isreg():
                f = tar.extractfile(m)
                data[name] = f.read() if f is not None else b""
                state[name] = ["f", hashlib.md5(data[name]).hexdigest(), bool(m.mode & 0o100)]
            elif m.islnk():
                blob = data.get(m.linkname.rstrip("/"), b"")
                state[name] = ["f", hashlib.md5(blob).hexdigest(), bool(m.mode & 0o100)]
            elif m.issym():
                state[name] = ["l", m.linkname, ["missing"]]
    return state


def baseline_state(task: Task) -> dict[str, list[Any]]:
    spec = task.files.get(SNAPSHOT)
    return dict(_baseline(spec.data())) if spec is not None else {}
