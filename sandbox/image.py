"""Build the docker backend's image `clawloop-sandbox:latest`.

Two ways, tried in this order by `method="auto"`:
- `dockerfile`: `docker build` of sandbox/Dockerfile (needs a registry for the base image and
  PyPI for the runtime packages);
- `debootstrap`: a Debian minbase rootfs with python3 made locally (needs root, debootstrap and
  a Debian mirror), plus a copy of the task runtime venv when its python matches the rootfs's,
  imported with `docker import`. The rootfs is cached in ~/.cache/clawloop/.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import socket
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from sandbox._layout import RUNTIME_MOUNT, SYSTEM_PATH, venv_origin
from sandbox.base import SandboxError
from sandbox.docker import DEFAULT_IMAGE, client

HERE = Path(__file__).parent
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = "python3,procps,ca-certificates"
"""Debian packages of the image (sandbox/Dockerfile installs the same): its label
PACKAGES_LABEL records them, so scripts/docker-setup.sh rebuilds an image made from another list."""
PACKAGES_LABEL = "clawloop.packages"


def registry_reachable(host: str = "registry-1.docker.io", timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def build_image(tag: str = DEFAULT_IMAGE, runtime_dir: Path | None = None, method: str = "auto",
                log: Callable[[str], None] = print) -> str:
    """Build the image and return how it was built ('dockerfile' or 'debootstrap')."""
    if method not in ("auto", "dockerfile", "debootstrap"):
        raise SandboxError(f"unknown build method {method!r} (auto, dockerfile, debootstrap)")
    c = client()
    if method == "dockerfile" or (method == "auto" and registry_reachable()):
        try:
            log(f"building {tag} from {HERE / 'Dockerfile'}")
            c.images.build(path=str(HERE), dockerfile="Dockerfile", tag=tag, rm=True, pull=False,
                           labels={PACKAGES_LABEL: PACKAGES})
            return "dockerfile"
        except Exception as e:
            if method == "dockerfile":
                raise SandboxError(f"docker build failed: {str(e)[:300]}") from None
            log(f"docker build failed ({str(e)[:120]}); falling back to debootstrap")
    rootfs = debootstrap_rootfs(log=log)
    with tempfile.TemporaryDirectory(prefix="clawloop-image-") as tmp:
        tar_path = Path(tmp) / "rootfs.tar"
        with_runtime = _write_tar(rootfs, runtime_dir, tar_path, log)
        changes = [f"ENV PATH={RUNTIME_MOUNT}/bin:{SYSTEM_PATH}" if with_runtime else f"ENV PATH={SYSTEM_PATH}",
                   "ENV LANG=C.UTF-8", "WORKDIR /workspace", 'CMD ["/bin/bash"]',
                   f"LABEL {PACKAGES_LABEL}={PACKAGES}"]
        if with_runtime:
            changes.append(f"LABEL clawloop.runtime={RUNTIME_MOUNT}")
        repo, _, version = tag.partition(":")
        log(f"importing {tag} ({tar_path.stat().st_size >> 20} MiB)")
        c.api.import_image_from_file(str(tar_path), repository=repo, tag=version or "latest",
                                     changes=changes)
    return "debootstrap"


def debootstrap_rootfs(suite: str = SUITE, log: Callable[[str], None] = print,
                       packages: str = PACKAGES) -> Path:
    """A cached Debian minbase rootfs with `packages` (made on first use; the cache is keyed by
    suite and package list, so a change of either makes a new one)."""
    cache = Path(os.environ.get("CLAWLOOP_ROOTFS_CACHE") or Path.home() / ".cache" / "clawloop")
    key = hashlib.sha256(",".join(sorted(packages.split(","))).encode()).hexdigest()[:12]
    rootfs = cache / f"rootfs-{suite}-{key}"
    if (rootfs / ".complete").exists():
        return rootfs
    if os.geteuid() != 0:
        raise SandboxError("building the image without a registry needs root (debootstrap)")
    if not shutil.which("debootstrap"):
        raise SandboxError("debootstrap not found: apt-get install debootstrap")
    tmp = cache / f"rootfs-{suite}-{key}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    mirror = os.environ.get("CLAWLOOP_DEBIAN_MIRROR", MIRROR)
    log(f"debootstrap {suite} from {mirror} (a few minutes)")
    r = subprocess.run(["debootstrap", "--variant=minbase", f"--include={packages}", suite, str(tmp), mirror],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SandboxError(f"debootstrap failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    (tmp / ".complete").touch()
    tmp.rename(rootfs)
    return rootfs


def _python_version(rootfs: Path) -> str | None:
    for p in sorted((rootfs / "usr" / "bin").glob("python3.*")):
        m = re.fullmatch(r"python(3\.\d+)", p.name)
        if m:
            return m.group(1)
    return None


def _write_tar(rootfs: Path, runtime: Path | None, out: Path, log: Callable[[str], None]) -> bool:
    """Tar the rootfs plus, when compatible, the runtime at /opt/clawloop-runtime."""
    include_runtime = False
    if runtime is not None and (runtime / "pyvenv.cfg").exists():
        cfg = (runtime / "pyvenv.cfg").read_text()
        m = re.search(r"^version(?:_info)?\s*=\s*(3\.\d+)", cfg, re.M)
        want = _python_version(rootfs)
        include_runtime = bool(m and m.group(1) == want)
        if not include_runtime:
            log(f"runtime {runtime} (python {m.group(1) if m else '?'}) does not match the rootfs's "
                f"python {want}: image built without it")
    with tarfile.open(out, "w") as tar:
        tar.add(rootfs, arcname=".", filter=lambda ti: None if ti.name == "./.complete" else ti)
        if include_runtime and runtime is not None:
            origin = venv_origin(runtime)
            arc = "." + RUNTIME_MOUNT
            for dirpath, dirnames, filenames in os.walk(runtime):
                rel = os.path.relpath(dirpath, runtime)
                base = arc if rel == "." else f"{arc}/{rel}"
                tar.add(dirpath, arcname=base, recursive=False)
                for n in dirnames:  # os.walk does not descend into symlinked dirs: keep the links
                    if os.path.islink(os.path.join(dirpath, n)):
                        tar.add(os.path.join(dirpath, n), arcname=f"{base}/{n}", recursive=False)
                for n in filenames:
                    p = os.path.join(dirpath, n)
                    ti = tar.gettarinfo(p, arcname=f"{base}/{n}")
                    if rel == "bin" and ti.isfile() and origin:
                        data = Path(p).read_bytes()
                        if data.startswith(b"#!") or b"VIRTUAL_ENV" in data[:4096]:
                            # Console scripts name the venv's build path: make them relocatable.
                            data = data.replace(origin.encode(), RUNTIME_MOUNT.encode())
                            ti.size = len(data)
                            tar.addfile(ti, io.BytesIO(data))
                            continue
                    if ti.isfile():
                        with open(p, "rb") as f:
                            tar.addfile(ti, f)
                    else:
                        tar.addfile(ti)
    return include_runtime
