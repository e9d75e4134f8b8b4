"""Reading a pinned commit of a public repository, file by file, for the benchmarks' fetch scripts
(clawgym/, skillsbench/, claw_eval_live/ fetch.py): the repository comes from `--mirror DIR`
holding `owner+name/repo` git dirs when given, else a shallow fetch from github.com; files are read
with `git cat-file`, since a mirror may lack objects of unrelated paths (which `git archive` refuses).
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(src: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(src), *args], check=True, capture_output=True).stdout


def source(repo: str, commit: str, mirror: Path | None, tmp: Path) -> Path:
    """The git dir holding `commit`: the mirror's, else a shallow fetch into `tmp`."""
    src = mirror / repo.replace("/", "+") / "repo" if mirror else None
    if src is not None and src.is_dir():
        return src
    src = tmp / "repo"
    subprocess.run(["git", "init", "-q", "--bare", str(src)], check=True)
    subprocess.run(["git", "--git-dir", str(src), "fetch", "-q", "--depth", "1",
                    f"https://github.com/{repo}.git", commit], check=True)
    return src


def blobs(src: Path, commit: str, *paths: str) -> list[tuple[str, str, bool]]:
    """(path, object, executable) of every file under `paths` at `commit`."""
    rows = []
    for row in filter(None, git(src, "ls-tree", "-r", "-z", commit, "--", *paths).split(b"\0")):
        meta, _, name = row.partition(b"\t")
        mode, kind, obj = meta.decode().split()
        if kind == "blob":
            rows.append((name.decode(), obj, mode == "100755"))
    return rows


def has(src: Path, obj: str) -> bool:
    """Whether the source holds object `obj` (a mirror may not)."""
    return subprocess.run(["git", "--git-dir", str(src), "cat-file", "-e", obj]).returncode == 0


def write_blob(src: Path, obj: str, dest: Path, executable: bool, data: bytes | None = None) -> None:
    """Write object `obj` (or `data`, its edited content) to `dest`, mode 755 or 644."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(git(src, "cat-file", "blob", obj) if data is None else data)
    dest.chmod(0o755 if executable else 0o644)
