"""Export InterCode-Bash at its pinned commit (kept out of the repository: its data is not ours).

    .venv/bin/python benchmarks/intercode/fetch.py OUT [--mirror DIR]
    clawloop eval OUT --agent oracle        # and --agent noop; --format intercode is detected
    .venv/bin/python benchmarks/intercode/replay.py OUT --model gpt-4 --limit 20

What OUT gets from princeton-nlp/intercode (MIT) at COMMIT: the 200 NL2Bash queries with gold
commands (`data/nl2bash/`), the scripts that build their four file systems
(`docker/bash_scripts/`), the Dockerfile and .gitignore those run under (for reference), the
published trajectories of the multi-turn runs (`data/results/bash/`), the licence, and PIN.json
(repo, commit). The repository comes from `--mirror DIR` holding `owner+name/repo` git dirs
when given (as benchmarks/harbor_public/fetch.py), else a shallow fetch from github.com. Files
are read one by one with `git cat-file` (a mirror may lack objects of unrelated paths, which
`git archive` refuses). The hand-written fixture tests/fixtures/intercode-mini has the same
layout, for CI.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

REPO = "princeton-nlp/intercode"
COMMIT = "c3e46d827cfc9d4c704ec078f7abf9f41e3191d8"
PATHS = ("data/nl2bash", "data/results/bash", "docker/bash_scripts", "docker/nl2bash.Dockerfile",
         "docker/docker.gitignore", "LICENSE.md")


def _git(src: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(src), *args], check=True, capture_output=True).stdout


OPTIONAL = "data/results/"
"""Files a source may lack (a mirror misses data/results/bash/gpt-3.5/..._fs_2.json): skipped with a note."""


def export(out: Path, mirror: Path | None = None, commit: str = COMMIT) -> tuple[int, list[str]]:
    """Write PATHS of `commit` under `out`: (files written, optional files the source lacks)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = mirror / REPO.replace("/", "+") / "repo" if mirror else None
        if src is None or not src.is_dir():
            src = Path(tmp) / "repo"
            subprocess.run(["git", "init", "-q", "--bare", str(src)], check=True)
            subprocess.run(["git", "--git-dir", str(src), "fetch", "-q", "--depth", "1",
                            f"https://github.com/{REPO}.git", commit], check=True)
        listing = _git(src, "ls-tree", "-r", "-z", commit, "--", *PATHS).split(b"\0")
        n, missing = 0, []
        for row in filter(None, listing):
            meta, _, name = row.partition(b"\t")
            mode, kind, obj = meta.split()
            if kind != b"blob":
                continue
            if subprocess.run(["git", "--git-dir", str(src), "cat-file", "-e", obj.decode()]).returncode != 0:
                if not name.decode().startswith(OPTIONAL):
                    raise SystemExit(f"{src}: object {obj.decode()} of {name.decode()} is missing")
                missing.append(name.decode())
                continue
            dest = out / name.decode()
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(_git(src, "cat-file", "blob", obj.decode()))
            dest.chmod(0o755 if mode == b"100755" else 0o644)
            n += 1
    pin = {"repo": REPO, "commit": commit, "paths": list(PATHS), "missing": missing}
    (out / "PIN.json").write_text(json.dumps(pin, indent=1) + "\n")
    return n, missing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mirror", type=Path, default=None, help="dir of owner+name/repo git dirs")
    ap.add_argument("--commit", default=COMMIT)
    a = ap.parse_args()
    n, missing = export(a.out, a.mirror, a.commit)
    print(f"{n} files of {REPO}@{a.commit[:12]} in {a.out}"
          + (f"; not in the source: {', '.join(missing)}" if missing else ""))


if __name__ == "__main__":
    main()
