"""Environment layers: what a Dockerfile's package installs add to an image, built on the host
from registry packages only, cached read-only, merged into a sandbox's root.

Why: a Harbor task whose Dockerfile runs `apt-get install asciinema` or `pip install
scikit-learn` needs those files in its sandbox, and the sandbox has no network. A layer is the
set of files those installs would add to the sandbox's system:

- `apt`: the dependency closure of the packages minus what the host already has (bwrap's /usr is
  the host's), resolved by `apt-get -s install` against the host's own dpkg database and apt
  lists, fetched with `apt-get download` and unpacked with `dpkg-deb -x`. Maintainer scripts
  never run: the post-install steps that matter are redone statically (merged-/usr moves,
  `update-alternatives --install` links and `ucf NEW /etc/CONF` first-install copies read from
  postinst); libraries land in the multiarch
  dirs the loader searches without a cache.
- `pip`: `pip install --prefix` with the task runtime's own interpreter, so only what the
  runtime lacks is installed; console scripts are rewritten to the runtime's path inside.

Layers are keyed by the content hash of (kind, package list, base identity: the host's dpkg
database or the runtime's python and distributions), built in a temp dir as the unprivileged
sandbox uid when running as root (the network-facing and archive-unpacking steps never run as
root), copied into the cache owned by the caller and renamed into place (atomic: a reader sees
a whole layer or none). manifest.json pins what was resolved (package=version, the sha256 of
every .deb or wheel) and a digest of the tree; `build_from_manifest` rebuilds it byte for byte.

Package names are checked against strict patterns before any command sees them: a name with
shell metacharacters, a path, a URL or an option is refused (LayerError), and every command is
an argv (no shell).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sandbox.layer_apt import build_apt
from sandbox.layer_pip import build_pip
from sandbox.layer_spec import (
    FORMAT,
    MANIFEST,
    Layer,
    LayerError,
    LayerSpec,
    build_workdir,
    cache_root,
    identity_for,
    layer_key,
    sha256_hex,
)


# ------------------------------------------------------------------------------ the cache
def tree_digest(root: Path) -> str:
    """sha256 over every entry's relative path, type, permission bits and content (or link
    target), in sorted order: equal digests mean byte-identical layers."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for n in sorted([*dirnames, *filenames]):
            p = Path(dirpath) / n
            rel = str(p.relative_to(root))
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                h.update(f"L {rel} {os.readlink(p)}\n".encode())
            elif stat.S_ISDIR(st.st_mode):
                h.update(f"D {rel} {stat.S_IMODE(st.st_mode):o}\n".encode())
            elif stat.S_ISREG(st.st_mode):
                h.update(f"F {rel} {stat.S_IMODE(st.st_mode):o} {sha256_hex(p.read_bytes())}\n".encode())
            elif _is_whiteout(st):
                h.update(f"W {rel}\n".encode())
    return h.hexdigest()


def _is_whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _seal(tree: Path) -> None:
    """Read-only for everyone, no set-id bits (nothing in a layer may gain privileges), readable
    and traversable by the sandbox uid; unreadable or special files are dropped."""
    for dirpath, dirnames, filenames in os.walk(tree, topdown=False):
        for n in filenames:
            p = Path(dirpath) / n
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode) or _is_whiteout(st):
                continue
            if not stat.S_ISREG(st.st_mode):
                p.unlink()
                continue
            os.chmod(p, (stat.S_IMODE(st.st_mode) & 0o555) | 0o444)
        for n in dirnames:
            p = Path(dirpath) / n
            if not p.is_symlink():
                os.chmod(p, 0o555)
    os.chmod(tree, 0o555)


def _load(path: Path) -> Layer | None:
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return Layer(path.name, path, manifest) if isinstance(manifest, dict) else None


def lookup(spec: LayerSpec, runtime_dir: Path | None = None, root: Path | None = None) -> Layer | None:
    """The cached layer of `spec` on this base, or None."""
    root = root or cache_root()
    return _load(root / layer_key(spec, identity_for(spec, runtime_dir)))


def ensure_layer(spec: LayerSpec, runtime_dir: Path | None = None, root: Path | None = None,
                 log: Callable[[str], None] | None = None) -> Layer:
    """The layer of `spec`, built (and cached) if missing. LayerError when it cannot be built."""
    root = root or cache_root()
    key = layer_key(spec, identity_for(spec, runtime_dir))
    found = _load(root / key)
    if found is not None:
        return found
    return _build(spec, key, None, runtime_dir, root, log)


def build_from_manifest(manifest: dict[str, object], runtime_dir: Path | None = None, root: Path | None = None,
                        ) -> Layer:
    """Rebuild a layer from the pins of its manifest (same packages, versions, hashes) under the
    same key; the tree digest must match."""
    root = root or cache_root()
    spec = LayerSpec.from_json(manifest)
    key = str(manifest["key"])
    if not re.fullmatch(r"(apt|pip)-[0-9a-f]{24}", key):
        raise LayerError(f"manifest key {key!r}: not a layer key")
    resolved = manifest.get("resolved") or []
    assert isinstance(resolved, list)
    if spec.kind == "apt":
        pins: object = [(str(r["package"]), str(r["version"]), str(r["arch"])) for r in resolved]
    else:
        pins = [dict(r) for r in resolved]
    layer = _build(spec, key, pins, runtime_dir, root, None, expect=manifest)
    return layer


def _build(spec: LayerSpec, key: str, pins: object, runtime_dir: Path | None, root: Path,
           log: Callable[[str], None] | None, expect: dict[str, object] | None = None) -> Layer:
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if log:
        log(f"building {spec.kind} layer {key} ({' '.join(spec.packages)})")
    stage = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=root))
    try:
        with build_workdir() as work:
            if spec.kind == "apt":
                extra = build_apt(spec, pins, stage, work, key)  # type: ignore[arg-type]
            else:
                assert runtime_dir is not None
                extra = build_pip(spec, pins, stage, work, runtime_dir)  # type: ignore[arg-type]
        if expect is not None:
            want = {(r.get("package") or r.get("name")): r.get("sha256") for r in expect.get("resolved") or []}  # type: ignore[union-attr]
            got = {(r.get("package") or r.get("name")): r.get("sha256") for r in extra["resolved"]}  # type: ignore[union-attr]
            if want != got:
                raise LayerError(f"layer {key}: fetched packages differ from the manifest's pins")
        _seal(stage / "tree")
        digest = tree_digest(stage / "tree")
        if expect is not None and expect.get("tree_sha256") != digest:
            raise LayerError(f"layer {key}: rebuilt tree differs from the manifest (digest {digest[:12]})")
        manifest = {"key": key, "format": FORMAT, **spec.to_json(), **extra, "tree_sha256": digest,
                    "size_bytes": disk_usage(stage / "tree"), "built_s": round(time.monotonic() - started, 2),
                    "python": sys.version.split()[0]}
        tmp = stage / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        os.rename(tmp, stage / MANIFEST)
        os.chmod(stage, 0o755)
        try:
            os.rename(stage, root / key)
        except OSError:  # built meanwhile by another process: theirs stands
            if _load(root / key) is None:
                raise
            remove_tree(stage)
        layer = _load(root / key)
        assert layer is not None
        return layer
    finally:
        if stage.exists():
            remove_tree(stage)


def remove_tree(path: Path) -> None:
    """Delete a (sealed, read-only) layer dir."""
    for dirpath, dirnames, _ in os.walk(path):
        for n in dirnames:
            p = Path(dirpath) / n
            if not p.is_symlink():
                os.chmod(p, 0o755)
    if path.is_dir():
        os.chmod(path, 0o755)
    shutil.rmtree(path, ignore_errors=True)


def disk_usage(path: Path) -> int:
    """Bytes the files of a tree take on disk (allocated blocks; links count once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        for n in [*dirnames, *filenames]:
            st = os.lstat(os.path.join(dirpath, n))
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total


@dataclasses.dataclass(frozen=True)
class CachedLayer:
    key: str
    kind: str
    packages: tuple[str, ...]
    size_bytes: int
    mtime: float
    complete: bool


def list_layers(root: Path | None = None) -> list[CachedLayer]:
    """Every layer dir of the cache (and leftovers of interrupted builds, `complete` False)."""
    root = root or cache_root()
    if not root.is_dir():
        return []
    out = []
    for d in sorted(root.iterdir()):
        if not d.is_dir() or d.is_symlink():
            continue
        layer = _load(d)
        m = layer.manifest if layer else {}
        out.append(CachedLayer(d.name, str(m.get("kind", "?")), tuple(m.get("packages") or ()),  # type: ignore[arg-type]
                               disk_usage(d), d.stat().st_mtime, layer is not None))
    return out


def prune(root: Path | None = None, keys: list[str] | None = None, older_than_s: float | None = None) -> tuple[int, int]:
    """Remove layers (all, those in `keys`, or those unused for `older_than_s`) and unfinished
    builds; returns (count, bytes freed). A sandbox that mounted a layer keeps its files (the
    mount holds them) until it closes."""
    root = root or cache_root()
    count = freed = 0
    now = time.time()
    for c in list_layers(root):
        if keys is not None and c.key not in keys and c.complete:
            continue
        if older_than_s is not None and c.complete and now - c.mtime < older_than_s:
            continue
        remove_tree(root / c.key)
        count += 1
        freed += c.size_bytes
    return count, freed


def touch(layer: Layer) -> None:
    """Mark a layer used now (prune --older-than counts from the last use)."""
    with contextlib.suppress(OSError):
        os.utime(layer.path)
