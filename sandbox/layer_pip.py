"""A pip layer (sandbox.layers): `pip install --prefix` with the task runtime's interpreter, only
what the runtime lacks, console scripts pointed at the runtime's path inside."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

from sandbox._layout import RUNTIME_MOUNT
from sandbox.layer_spec import LayerError, LayerSpec, run_argv, tail_lines

_SHEBANG = re.compile(rb"^#!\S*/python[0-9.]*(\s|$)")


# ------------------------------------------------------------------------------------- pip
def _pip_base(runtime_dir: Path, prefix: Path) -> list[str]:
    return [str(runtime_dir.absolute() / "bin" / "python"), "-m", "pip", "install", "--prefix", str(prefix),
            "--no-compile", "--no-warn-script-location", "--disable-pip-version-check", "--no-cache-dir",
            "--no-input", "--only-binary", ":all:"]


def build_pip(spec: LayerSpec, pins: list[dict[str, str]] | None, stage: Path, work: Path,
              runtime_dir: Path) -> dict[str, object]:
    """Resolve against the runtime (`--dry-run --report`: what pip would add or replace, nothing
    written), then install exactly those pins, hash-checked, into a prefix of their own. A pin
    that replaces a runtime distribution (another version) is installed beside it and the
    runtime's files it does not ship again are whited out (`_whiteout_replaced`), so the merged
    runtime shows one version; the runtime itself is never written (pip never uninstalls)."""
    prefix = work / "prefix"
    if pins is None:
        report = work / "report.json"
        r = run_argv([*_pip_base(runtime_dir, prefix), "--dry-run", "--report", str(report), "--", *spec.packages], work)
        if r.returncode != 0:
            text = r.stdout + r.stderr
            m = re.search(r"No matching distribution found for (\S+)", text)
            if m:
                raise LayerError(f"python package {m.group(1)!r} is not in the registry")
            raise LayerError(f"pip install {' '.join(spec.packages)} failed: {tail_lines(text)}")
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
        r = run_argv([*_pip_base(runtime_dir, prefix), "--no-deps", "--ignore-installed", "--require-hashes",
                     "-r", str(lock)], work)
        if r.returncode != 0:
            raise LayerError(f"pip install of the pinned layer failed: {tail_lines(r.stdout + r.stderr)}")
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


