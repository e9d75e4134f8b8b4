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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from sandbox._layout import RUNTIME_MOUNT
from sandbox.base import SandboxError

KINDS = ("apt", "pip")
FORMAT = 3
"""Layout version of a layer dir; part of the key, so a change of layout never reuses old ones."""
MANIFEST = "manifest.json"
APT_LIST_DIR = "usr/share/clawloop-layers"
"""Where an apt layer lists its packages (one a line, `KEY.list`): the offline apt-get stand-in
(sandbox/offline_tools.py) reads them, so a later `apt-get install` of a layered package succeeds."""
_APT_NAME = re.compile(r"^[a-z0-9][a-z0-9+.\-]{0,99}(:(amd64|arm64|all|i386))?(=[A-Za-z0-9.+~:\-]{1,80})?$")
_PIP_SPEC = r"(===?|~=|!=|<=?|>=?)[A-Za-z0-9.*+!_\-]{1,60}"
_PIP_REQ = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._\-]{0,99})(\[[A-Za-z0-9._\-]+(,[A-Za-z0-9._\-]+)*\])?"
                      rf"({_PIP_SPEC}(,{_PIP_SPEC})*)?$")
_MERGED = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
_KEEP_TOPS = ("usr", "etc")
_SHEBANG = re.compile(rb"^#!\S*/python[0-9.]*(\s|$)")
_ALT = re.compile(r"update-alternatives\s+(?:--quiet\s+)?--install\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)"
                  r"((?:\s+--slave\s+\S+\s+\S+\s+\S+)*)")
_SLAVE = re.compile(r"--slave\s+(\S+)\s+(\S+)\s+(\S+)")
_UCF = re.compile(r"(?m)^\s*ucf\s+((?:--?[a-z][a-z-]*\s+)*)([^\s;&|]+)\s+([^\s;&|]+)\s*$")
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
def _sha(data: bytes) -> str:
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
    return "dpkg:" + _sha("\n".join(lines).encode())[:32]


def runtime_identity(runtime_dir: Path) -> str:
    """The runtime's interpreter version and distributions, hashed: what a pip layer builds on."""
    dists = sorted(p.name for site in runtime_dir.glob("lib/python*/site-packages") for p in site.iterdir()
                   if p.name.endswith(".dist-info"))
    py = sorted(p.name for p in runtime_dir.glob("lib/python*"))
    return "runtime:" + _sha("\n".join([*py, *dists]).encode())[:32]


def layer_key(spec: LayerSpec, identity: str) -> str:
    """The cache key: sha256 of the canonical JSON of (format, kind, packages, base identity)."""
    blob = json.dumps({"format": FORMAT, **spec.to_json(), "base": identity}, sort_keys=True,
                      separators=(",", ":")).encode()
    return f"{spec.kind}-{_sha(blob)[:24]}"


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


def _run(argv: list[str], cwd: Path, *, timeout: float = BUILD_TIMEOUT_S, env: dict[str, str] | None = None,
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
def _workdir() -> Iterator[Path]:
    """A private temp dir the builder uid owns (outside the cache: root's home is not reachable)."""
    d = Path(tempfile.mkdtemp(prefix="clawloop-layer-build-"))
    try:
        who = builder_uid()
        if who:
            os.chown(d, *who)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _tail(text: str, n: int = 3) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return " | ".join(lines[-n:])[:400]


# ------------------------------------------------------------------------------------- apt
def resolve_apt(packages: tuple[str, ...], cwd: Path) -> list[tuple[str, str, str]]:
    """(name, version, arch) of every package `apt-get install` would add to this host, from a
    simulation against the host's dpkg database and apt lists (no lock, no root, no network)."""
    r = _run(["apt-get", "-s", "-q", "-o", "Debug::NoLocking=1", "-o", "APT::Get::Show-User-Simulation-Note=0",
              "install", "--no-install-recommends", "-y", "--", *packages], cwd)
    missing = re.findall(r"^E: (?:Unable to locate package|Package '?)(\S+?)'?(?: has no installation candidate)?$",
                         r.stdout + r.stderr, re.M)
    if missing:
        raise LayerError(f"apt package {missing[0]!r} is not in the registry")
    if r.returncode != 0:
        raise LayerError(f"apt cannot install {' '.join(packages)}: {_tail(r.stdout + r.stderr)}")
    out = []
    for m in re.finditer(r"^Inst (\S+) (?:\[[^\]]*\] )?\((\S+) [^\[]*\[([a-z0-9]+)\]", r.stdout, re.M):
        out.append((m.group(1).split(":")[0], m.group(2), m.group(3)))
    return sorted(out)


def apt_download_size(pins: list[tuple[str, str, str]], cwd: Path) -> int:
    """Bytes of the .debs of `pins`, from the apt lists (no download)."""
    if not pins:
        return 0
    r = _run(["apt-cache", "show", "--no-all-versions", "--", *(f"{n}={v}" for n, v, _ in pins)], cwd)
    return sum(int(x) for x in re.findall(r"^Size: (\d+)$", r.stdout, re.M))


def _fetch_debs(pins: list[tuple[str, str, str]], cwd: Path) -> dict[str, Path]:
    if not pins:
        return {}
    size = apt_download_size(pins, cwd)
    if size > max_download_bytes():
        raise LayerError(f"apt layer of {len(pins)} packages would fetch {size / 2**20:.0f} MiB, more than "
                         f"CLAWLOOP_LAYER_MAX_MB={max_download_bytes() / 2**20:g}")
    r = _run(["apt-get", "-q", "-o", "Debug::NoLocking=1", "download", "--",
              *(f"{n}:{a}={v}" if a != "all" else f"{n}={v}" for n, v, a in pins)], cwd)
    if r.returncode != 0:
        raise LayerError(f"apt-get download failed: {_tail(r.stdout + r.stderr)}")
    debs = {}
    for n, v, a in pins:
        found = sorted(cwd.glob(f"{n}_*_{a}.deb"))
        if not found:
            raise LayerError(f"apt-get download: no .deb for {n}={v}")
        debs[n] = found[0]
    return debs


def _unpack_debs(debs: dict[str, Path], dest: Path, cwd: Path) -> list[str]:
    """`dpkg-deb -x` each (as the builder uid), and the postinst scripts' text (alternatives, ucf)."""
    scripts = []
    for name, deb in sorted(debs.items()):
        r = _run(["dpkg-deb", "-x", str(deb), str(dest)], cwd)
        if r.returncode != 0:
            raise LayerError(f"dpkg-deb -x {deb.name}: {_tail(r.stderr)}")
        ctl = cwd / f"ctl-{name}"
        r = _run(["dpkg-deb", "-e", str(deb), str(ctl)], cwd)
        if r.returncode == 0 and (ctl / "postinst").is_file():
            scripts.append((ctl / "postinst").read_text(errors="replace"))
    return scripts


def merge_usr(root: Path) -> None:
    """Debian's merged /usr: what a package ships in /bin, /lib... goes to usr/ (the sandbox's
    /bin is a link there); tops other than usr/ and etc/ (var, run, opt state) are dropped, as
    they would be created by maintainer scripts that never run here."""
    for top, target in _MERGED.items():
        src = root / top
        if src.is_dir() and not src.is_symlink():
            _merge_tree(src, root / target)
            shutil.rmtree(src)
    for e in list(root.iterdir()):
        if e.name not in _KEEP_TOPS:
            if e.is_dir() and not e.is_symlink():
                shutil.rmtree(e)
            else:
                e.unlink()


def _merge_tree(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for e in src.iterdir():
        t = dst / e.name
        if e.is_dir() and not e.is_symlink():
            _merge_tree(e, t)
        elif not os.path.lexists(t):
            os.rename(e, t)


def alternatives(scripts: list[str]) -> dict[str, tuple[str, str, int]]:
    """name → (link, path, priority) of the `update-alternatives --install` lines (with their
    --slave triples) of postinst scripts; the highest priority per name wins."""
    best: dict[str, tuple[str, str, int]] = {}
    for text in scripts:
        text = re.sub(r"\\\n\s*", " ", text)
        for m in _ALT.finditer(text):
            link, name, path, prio = m.group(1), m.group(2), m.group(3), int(m.group(4))
            entries = [(link, name, path)] + _SLAVE.findall(m.group(5) or "")
            for lk, nm, pth in entries:
                if "$" in lk + nm + pth or not lk.startswith("/") or not pth.startswith("/"):
                    continue  # built from shell variables: not reproducible statically
                if nm not in best or best[nm][2] < prio:
                    best[nm] = (lk, pth, prio)
    return best


def ucf_copies(scripts: list[str]) -> list[tuple[str, str]]:
    """(new file, config file) of the `ucf NEW DEST` lines of postinst scripts: on a first install
    ucf copies the packaged default into /etc (libreoffice-common's registry, for one); lines
    built from shell variables are not reproducible statically and are left out."""
    out: list[tuple[str, str]] = []
    for text in scripts:
        for m in _UCF.finditer(re.sub(r"\\\n\s*", " ", text)):
            src, dest = m.group(2).strip("'\""), m.group(3).strip("'\"")
            if "$" in src + dest or not (src.startswith("/") and dest.startswith("/etc/")):
                continue
            if (src, dest) not in out:
                out.append((src, dest))
    return out


def install_ucf(root: Path, copies: list[tuple[str, str]], host: Path = Path("/")) -> list[str]:
    """Copy each packaged default to its config file, as ucf does on a first install, where
    neither the host nor the layer has that config file (the host's stands)."""
    made = []
    for src, dest in copies:
        src_rel, dest_rel = _usr_path(src), dest.lstrip("/")
        if ".." in Path(src_rel).parts + Path(dest_rel).parts or not (root / src_rel).is_file() \
                or os.path.lexists(host / dest_rel) or os.path.lexists(root / dest_rel):
            continue
        (root / dest_rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / src_rel, root / dest_rel)
        made.append(dest)
    return made


def _usr_path(p: str) -> str:
    """/bin/nc → usr/bin/nc (relative, merged /usr)."""
    rel = p.lstrip("/")
    top, _, rest = rel.partition("/")
    return f"{_MERGED[top]}/{rest}" if top in _MERGED else rel


def link_alternatives(root: Path, alts: dict[str, tuple[str, str, int]], host: Path = Path("/")) -> list[str]:
    """Create the alternatives links the postinst scripts would have: LINK → /etc/alternatives/NAME
    → PATH, for names neither the host nor the layer has already (the host's choice stands)."""
    made = []
    for name, (link, path, _) in sorted(alts.items()):
        if not re.fullmatch(r"[A-Za-z0-9_.+\-]+", name):
            continue
        link_rel, path_rel = _usr_path(link), _usr_path(path)
        if not (root / path_rel).exists() or os.path.lexists(host / link_rel) \
                or os.path.lexists(host / "etc/alternatives" / name) or os.path.lexists(root / link_rel):
            continue
        (root / "etc/alternatives").mkdir(parents=True, exist_ok=True)
        os.symlink("/" + path_rel, root / "etc/alternatives" / name)
        (root / link_rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(f"/etc/alternatives/{name}", root / link_rel)
        made.append(name)
    return made


def _build_apt(spec: LayerSpec, pins: list[tuple[str, str, str]] | None, stage: Path, work: Path,
               key: str) -> dict[str, object]:
    pins = resolve_apt(spec.packages, work) if pins is None else pins
    debs = _fetch_debs(pins, work)
    hashes = {n: _sha(p.read_bytes()) for n, p in debs.items()}
    raw = work / "root"
    raw.mkdir()
    who = builder_uid()
    if who:
        os.chown(raw, *who)
    scripts = _unpack_debs(debs, raw, work)
    tree = stage / "tree"
    # A copy made by the caller: the cache's files are the caller's, not the builder uid's.
    shutil.copytree(raw, tree, symlinks=True)
    merge_usr(tree)
    alts = link_alternatives(tree, alternatives(scripts))
    configs = install_ucf(tree, ucf_copies(scripts))
    listing = tree / APT_LIST_DIR
    listing.mkdir(parents=True, exist_ok=True)
    (listing / f"{key}.list").write_text("".join(f"{n}\n" for n, _, _ in pins) +
                                         "".join(f"{p.split('=')[0].split(':')[0]}\n" for p in spec.packages))
    return {"resolved": [{"package": n, "version": v, "arch": a, "sha256": hashes[n]} for n, v, a in pins],
            "alternatives": alts, "ucf": configs}


# ------------------------------------------------------------------------------------- pip
def _pip_base(runtime_dir: Path, prefix: Path) -> list[str]:
    return [str(runtime_dir.absolute() / "bin" / "python"), "-m", "pip", "install", "--prefix", str(prefix),
            "--no-compile", "--no-warn-script-location", "--disable-pip-version-check", "--no-cache-dir",
            "--no-input", "--only-binary", ":all:"]


def _build_pip(spec: LayerSpec, pins: list[dict[str, str]] | None, stage: Path, work: Path,
               runtime_dir: Path) -> dict[str, object]:
    """Resolve against the runtime (`--dry-run --report`: what pip would add or replace, nothing
    written), then install exactly those pins, hash-checked, into a prefix of their own. A pin
    that replaces a runtime distribution (another version) is installed beside it and the
    runtime's files it does not ship again are whited out (`_whiteout_replaced`), so the merged
    runtime shows one version; the runtime itself is never written (pip never uninstalls)."""
    prefix = work / "prefix"
    if pins is None:
        report = work / "report.json"
        r = _run([*_pip_base(runtime_dir, prefix), "--dry-run", "--report", str(report), "--", *spec.packages], work)
        if r.returncode != 0:
            text = r.stdout + r.stderr
            m = re.search(r"No matching distribution found for (\S+)", text)
            if m:
                raise LayerError(f"python package {m.group(1)!r} is not in the registry")
            raise LayerError(f"pip install {' '.join(spec.packages)} failed: {_tail(text)}")
        pins = []
        for item in json.loads(report.read_text()).get("install", []):
            info = item.get("download_info") or {}
            archive = info.get("archive_info") or {}
            sha = (archive.get("hashes") or {}).get("sha256") or archive.get("hash", "").partition("sha256=")[2]
            if not sha:
                raise LayerError(f"pip: {item['metadata']['name']} has no sha256 to pin")
            pins.append({"name": item["metadata"]["name"], "version": item["metadata"]["version"],
                         "url": info.get("url", ""), "sha256": sha})
    if pins:
        lock = work / "pins.txt"
        lock.write_text("".join(f"{p['name']}=={p['version']} --hash=sha256:{p['sha256']}\n" for p in pins))
        r = _run([*_pip_base(runtime_dir, prefix), "--no-deps", "--ignore-installed", "--require-hashes",
                  "-r", str(lock)], work)
        if r.returncode != 0:
            raise LayerError(f"pip install of the pinned layer failed: {_tail(r.stdout + r.stderr)}")
    tree = stage / "tree"
    if prefix.is_dir():
        shutil.copytree(prefix, tree, symlinks=True)
    else:
        tree.mkdir()
    for script in sorted((tree / "bin").glob("*")) if (tree / "bin").is_dir() else []:
        _relocate_script(script)
    for info in tree.glob("lib/python*/site-packages/*.dist-info"):
        _drop_install_notes(info)
    replaced = _whiteout_replaced(tree, runtime_dir)
    return {"resolved": sorted(pins, key=lambda p: p["name"].lower()), "replaces": replaced}


def _dist_name(info_dir: str) -> str:
    return re.sub(r"[-_.]+", "-", info_dir[:-len(".dist-info")].rsplit("-", 1)[0]).lower()


def _whiteout_replaced(tree: Path, runtime_dir: Path) -> list[str]:
    """Hide, in the merged runtime, the files of runtime distributions the layer installs in
    another version (their dist-info dir and every RECORD entry the layer does not ship):
    overlayfs whiteouts (0/0 character devices), which only root can make; elsewhere the stale
    files stay visible beside the new version."""
    ours = {_dist_name(p.name): p for p in tree.glob("lib/python*/site-packages/*.dist-info")}
    replaced = []
    for site in sorted(runtime_dir.glob("lib/python*/site-packages")):
        rel_site = site.relative_to(runtime_dir)
        for info in sorted(site.glob("*.dist-info")):
            name = _dist_name(info.name)
            if name not in ours or ours[name].name == info.name:
                continue
            replaced.append(info.name[:-len(".dist-info")])
            if os.geteuid() != 0:
                continue
            entries = [info.name]
            record = info / "RECORD"
            if record.is_file():
                for line in record.read_text(errors="replace").splitlines():
                    path = line.rsplit(",", 2)[0] if line.count(",") >= 2 else line.split(",")[0]
                    if path and not path.startswith(info.name + "/"):
                        entries.append(path)
            for rel in entries:
                target = os.path.normpath(tree / rel_site / rel)
                if not target.startswith(str(tree) + os.sep) or os.path.lexists(target):
                    continue  # outside the prefix, or shipped again by the layer
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.mknod(target, stat.S_IFCHR | 0o000, os.makedev(0, 0))
    return replaced


def _drop_install_notes(info: Path) -> None:
    """REQUESTED says how pip was asked (by name or through the pinned lock), not what was
    installed: dropped (and from RECORD) so a rebuild from pins is byte-identical."""
    for name in ("REQUESTED", "direct_url.json"):
        (info / name).unlink(missing_ok=True)
    record = info / "RECORD"
    if record.is_file():
        drop = (f"{info.name}/REQUESTED,", f"{info.name}/direct_url.json,")
        lines = record.read_text().splitlines(keepends=True)
        record.write_text("".join(x for x in lines if not x.startswith(drop)))


def _relocate_script(script: Path) -> None:
    """Console scripts name the interpreter pip ran with (a host path): point them at the
    runtime's path inside the sandbox."""
    if script.is_symlink() or not script.is_file():
        return
    data = script.read_bytes()
    if _SHEBANG.match(data):
        nl = data.find(b"\n")
        script.write_bytes(f"#!{RUNTIME_MOUNT}/bin/python3".encode() + (data[nl:] if nl >= 0 else b"\n"))


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
                h.update(f"F {rel} {stat.S_IMODE(st.st_mode):o} {_sha(p.read_bytes())}\n".encode())
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
        with _workdir() as work:
            if spec.kind == "apt":
                extra = _build_apt(spec, pins, stage, work, key)  # type: ignore[arg-type]
            else:
                assert runtime_dir is not None
                extra = _build_pip(spec, pins, stage, work, runtime_dir)  # type: ignore[arg-type]
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
