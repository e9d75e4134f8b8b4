"""An apt layer (sandbox.layers): resolve the closure against the host's dpkg database, fetch
the .debs, unpack them, and redo statically the maintainer-script steps that matter
(merged-/usr moves, update-alternatives links, ucf first-install copies)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from sandbox.layer_spec import (
    LayerError,
    LayerSpec,
    builder_uid,
    max_download_bytes,
    run_argv,
    sha256_hex,
    tail_lines,
)

APT_LIST_DIR = "usr/share/clawloop-layers"
_MERGED = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
_KEEP_TOPS = ("usr", "etc")
_ALT = re.compile(r"update-alternatives\s+(?:--quiet\s+)?--install\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)"
                  r"((?:\s+--slave\s+\S+\s+\S+\s+\S+)*)")
_SLAVE = re.compile(r"--slave\s+(\S+)\s+(\S+)\s+(\S+)")
_UCF = re.compile(r"(?m)^\s*ucf\s+((?:--?[a-z][a-z-]*\s+)*)([^\s;&|]+)\s+([^\s;&|]+)\s*$")


# ------------------------------------------------------------------------------------- apt
def resolve_apt(packages: tuple[str, ...], cwd: Path) -> list[tuple[str, str, str]]:
    """(name, version, arch) of every package `apt-get install` would add to this host, from a
    simulation against the host's dpkg database and apt lists (no lock, no root, no network)."""
    r = run_argv(["apt-get", "-s", "-q", "-o", "Debug::NoLocking=1", "-o", "APT::Get::Show-User-Simulation-Note=0",
                  "install", "--no-install-recommends", "-y", "--", *packages], cwd)
    missing = re.findall(r"^E: (?:Unable to locate package|Package '?)(\S+?)'?(?: has no installation candidate)?$",
                         r.stdout + r.stderr, re.M)
    if missing:
        raise LayerError(f"apt package {missing[0]!r} is not in the registry")
    if r.returncode != 0:
        raise LayerError(f"apt cannot install {' '.join(packages)}: {tail_lines(r.stdout + r.stderr)}")
    out = []
    for m in re.finditer(r"^Inst (\S+) (?:\[[^\]]*\] )?\((\S+) [^\[]*\[([a-z0-9]+)\]", r.stdout, re.M):
        out.append((m.group(1).split(":")[0], m.group(2), m.group(3)))
    return sorted(out)


def apt_download_size(pins: list[tuple[str, str, str]], cwd: Path) -> int:
    """Bytes of the .debs of `pins`, from the apt lists (no download)."""
    if not pins:
        return 0
    r = run_argv(["apt-cache", "show", "--no-all-versions", "--", *(f"{n}={v}" for n, v, _ in pins)], cwd)
    return sum(int(x) for x in re.findall(r"^Size: (\d+)$", r.stdout, re.M))


def _fetch_debs(pins: list[tuple[str, str, str]], cwd: Path) -> dict[str, Path]:
    if not pins:
        return {}
    size = apt_download_size(pins, cwd)
    if size > max_download_bytes():
        raise LayerError(f"apt layer of {len(pins)} packages would fetch {size / 2**20:.0f} MiB, more than "
                         f"CLAWLOOP_LAYER_MAX_MB={max_download_bytes() / 2**20:g}")
    r = run_argv(["apt-get", "-q", "-o", "Debug::NoLocking=1", "download", "--",
                  *(f"{n}:{a}={v}" if a != "all" else f"{n}={v}" for n, v, a in pins)], cwd)
    if r.returncode != 0:
        raise LayerError(f"apt-get download failed: {tail_lines(r.stdout + r.stderr)}")
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
        r = run_argv(["dpkg-deb", "-x", str(deb), str(dest)], cwd)
        if r.returncode != 0:
            raise LayerError(f"dpkg-deb -x {deb.name}: {tail_lines(r.stderr)}")
        ctl = cwd / f"ctl-{name}"
        r = run_argv(["dpkg-deb", "-e", str(deb), str(ctl)], cwd)
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


def build_apt(spec: LayerSpec, pins: list[tuple[str, str, str]] | None, stage: Path, work: Path,
              key: str) -> dict[str, object]:
    pins = resolve_apt(spec.packages, work) if pins is None else pins
    debs = _fetch_debs(pins, work)
    hashes = {n: sha256_hex(p.read_bytes()) for n, p in debs.items()}
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


