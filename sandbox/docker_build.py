"""Task images for the docker backend: `docker build` of a build context, cached by content.

`build_task_image` builds a Dockerfile with its context (only the context: nothing of the host
reaches the build, as under Harbor) on a base image the daemon already has (never pulled), and
tags the result `clawloop-task:<sha256 of the Dockerfile, the context and the base image's id>`,
so an unchanged task reuses its image and a change (or a rebuilt base) builds anew.

The built image is flattened into one layer (`docker export` → `docker import`, keeping its ENV,
WORKDIR and labels): the backend gives a sandbox a writable root over a read-only /usr only for
one-layer images (`docker._system_binds`), and a task image deserves the same protection of its
system and runtime from the agent as the generic image. ENTRYPOINT, CMD and USER are dropped:
the backend runs its own pid 1 and its commands as root. What the build left under /workspace
(the backend binds the sandbox's workspace there, which would hide it) moves to
/.clawloop-seed/workspace in the image; the backend copies it back at open.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import os
import re
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sandbox.base import SandboxError
from sandbox.docker import SEED_DIR, SEED_LABEL, client

TASK_REPO = "clawloop-task"
BUILD_VERSION = "1"
"""Part of every tag: bump it when what a build makes changes, so every task image rebuilds."""
_SEEDED = "workspace"
_TAIL = 30  # build log lines kept for the error message
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_locks: dict[str, threading.Lock] = collections.defaultdict(threading.Lock)


class BuildError(SandboxError):
    """The task's image could not be built; the message is one line (the build log's gist)."""


def context_tag(files: Mapping[str, tuple[bytes, int]], dirs: Iterable[str], base_id: str) -> str:
    """`clawloop-task:<hash>` of a build context (path → (bytes, mode); empty dirs) on base image ids."""
    h = hashlib.sha256(f"clawloop-task {BUILD_VERSION}\0{base_id}\0".encode())
    for path in sorted(files):
        data, mode = files[path]
        h.update(f"f\0{path}\0{mode & 0o7777:o}\0{len(data)}\0".encode())
        h.update(data)
    for d in sorted(set(dirs)):
        h.update(f"d\0{d}\0".encode())
    return f"{TASK_REPO}:{h.hexdigest()[:32]}"


def base_image_id(base: str) -> str | None:
    """The daemon's id of image `base`, None when it does not have it (nothing is pulled)."""
    try:
        return str(client(timeout=30).images.get(base).id)
    except SandboxError:
        raise
    except Exception:
        return None


def build_task_image(files: Mapping[str, tuple[bytes, int]], dirs: Iterable[str] = (), *,
                     bases: Sequence[str], timeout: float = 600.0) -> str:
    """The tag of the image of this build context (`files` holds the Dockerfile; `bases` the
    images its FROMs name), built unless the daemon has it. BuildError (one line) when a base
    image is missing, the build fails or takes longer than `timeout` seconds."""
    if "Dockerfile" not in files:
        raise BuildError("build context has no Dockerfile")
    dirs = sorted(set(dirs))
    ids = {b: base_image_id(b) for b in bases}
    if missing := [b for b, i in ids.items() if i is None]:
        raise BuildError(f"base image {', '.join(missing)} is not available to docker here")
    tag = context_tag(files, dirs, ",".join(str(ids[b]) for b in bases))
    c = client()
    with _locks[tag]:
        if _has(c, tag):
            return tag
        image_id = _build(files, dirs, timeout)
        try:
            _flatten(c, image_id, tag)
        finally:  # the multi-layer original; a failure (in use elsewhere) is harmless
            with contextlib.suppress(Exception):
                c.api.remove_image(image_id, noprune=False)
    return tag


def _has(c: Any, tag: str) -> bool:
    try:
        c.images.get(tag)
        return True
    except Exception:
        return False


def _context_tar(files: Mapping[str, tuple[bytes, int]], dirs: list[str]) -> tempfile.SpooledTemporaryFile[bytes]:
    f = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115 (the caller closes it)
    with tarfile.open(fileobj=f, mode="w") as tar:
        for d in dirs:
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(ti)
        for path, (data, mode) in sorted(files.items()):
            ti = tarfile.TarInfo(path)
            ti.size, ti.mode = len(data), mode & 0o7777
            tar.addfile(ti, io.BytesIO(data))
    f.seek(0)
    return f


def build_network() -> str:
    """The network RUN steps get: CLAWLOOP_DOCKER_BUILD_NETWORK, else docker's default bridge
    (Harbor builds with network) where the daemon has one, else none (a daemon started by
    scripts/docker-setup.sh has no bridge: RUN steps that download fail, with their message)."""
    if os.environ.get("CLAWLOOP_DOCKER_BUILD_NETWORK"):
        return os.environ["CLAWLOOP_DOCKER_BUILD_NETWORK"]
    try:
        return "default" if client(timeout=30).api.networks(names=["bridge"]) else "none"
    except Exception:
        return "none"


def _build(files: Mapping[str, tuple[bytes, int]], dirs: list[str], timeout: float) -> str:
    """Run the build; the image id, or BuildError with the failing step's last lines."""
    tail: collections.deque[str] = collections.deque(maxlen=_TAIL)
    start = time.monotonic()
    image_id = None
    api = client().api
    try:
        with _context_tar(files, dirs) as ctx:
            stream = api.build(fileobj=ctx, custom_context=True, rm=True, forcerm=True, pull=False,
                               network_mode=build_network(), decode=True, timeout=max(1, int(timeout) + 1))
            for chunk in stream:
                if time.monotonic() - start > timeout:
                    stream.close()  # closing the connection cancels the daemon's build
                    raise BuildError(f"docker build timed out after {timeout:g}s (last: {_last(tail)})")
                if "error" in chunk:
                    raise BuildError(f"docker build failed: {_one_line(str(chunk['error']))} "
                                     f"(last output: {_last(tail)})")
                text = _ANSI.sub("", str(chunk.get("stream") or ""))
                tail.extend(line for line in text.splitlines() if line.strip())
                image_id = (chunk.get("aux") or {}).get("ID") or image_id
    except BuildError:
        raise
    except Exception as e:  # requests' ReadTimeout/ConnectionError, docker.errors.APIError
        if time.monotonic() - start >= timeout * 0.95 or "timed out" in str(e).lower():
            raise BuildError(f"docker build timed out after {timeout:g}s (last: {_last(tail)})") from None
        raise BuildError(f"docker build failed: {_one_line(str(e))}") from None
    if image_id is None:
        for line in reversed(tail):
            if line.startswith("Successfully built "):
                image_id = line.split()[-1]
                break
    if image_id is None:
        raise BuildError(f"docker build reported no image (last output: {_last(tail)})")
    return str(image_id)


def _one_line(s: str, n: int = 300) -> str:
    return " ".join(s.split())[:n]


def _last(tail: collections.deque[str]) -> str:
    """The last log line that is not docker's own step bookkeeping."""
    for line in reversed(tail):
        s = line.strip()
        if s and not s.startswith(("--->", "Removing intermediate", "Step ")):
            return _one_line(s, 200)
    return _one_line(tail[-1], 200) if tail else "none"


class _Chunks(io.RawIOBase):
    """A readable stream over an iterator of byte chunks (docker export's response)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._it, self._buf = chunks, b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            try:
                self._buf = next(self._it)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n], self._buf = self._buf[:n], self._buf[n:]
        return n


def _seeded(name: str) -> str:
    """Where a path of the exported root goes in the flat image (workspace content moves aside)."""
    rel = name.removeprefix("./")
    if rel == _SEEDED or rel.startswith(_SEEDED + "/"):
        return f"{SEED_DIR.lstrip('/')}/{rel}"
    return name


def _flatten(c: Any, image_id: str, tag: str) -> None:
    """Import the built image's filesystem as one layer tagged `tag`, with its ENV, WORKDIR, labels."""
    config = (c.api.inspect_image(image_id).get("Config") or {})
    ctr = c.api.create_container(image_id, command=["true"], network_disabled=True)["Id"]
    seeded = False
    try:
        with tempfile.TemporaryDirectory(prefix="clawloop-flatten-") as tmp:
            out = Path(tmp) / "root.tar"
            raw = io.BufferedReader(_Chunks(iter(c.api.export(ctr))), buffer_size=1 << 20)
            with tarfile.open(fileobj=raw, mode="r|") as src, tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as dst:
                for ti in src:
                    name = _seeded(ti.name)
                    if name != ti.name:
                        seeded = seeded or ti.name.removeprefix("./").rstrip("/") != _SEEDED
                        ti.name = name
                    if ti.islnk():  # hard links name their target by path: it may have moved
                        ti.linkname = _seeded(ti.linkname)
                    dst.addfile(ti, src.extractfile(ti) if ti.isfile() else None)
            labels = {**(config.get("Labels") or {}), "clawloop.task-image": "1"}
            if seeded:
                labels[SEED_LABEL] = "/" + _SEEDED
            changes = [f"ENV {k}={_quote(v)}" for k, _, v in
                       (e.partition("=") for e in config.get("Env") or [])]
            changes += [f"LABEL {_quote(k)}={_quote(v)}" for k, v in labels.items()]
            changes += [f"WORKDIR {config.get('WorkingDir') or '/'}", 'CMD ["/bin/bash"]']
            repo, _, version = tag.partition(":")
            c.api.import_image_from_file(str(out), repository=repo, tag=version, changes=changes)
    except Exception as e:
        raise BuildError(f"cannot flatten the built image: {_one_line(str(e))}") from None
    finally:
        with contextlib.suppress(Exception):
            c.api.remove_container(ctr, force=True)
    if not _has(c, tag):
        raise BuildError(f"docker import did not tag {tag}")


def _quote(s: str) -> str:
    """A Dockerfile word in double quotes, kept literal (no `$` substitution)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'
