"""Fetch the public Harbor task corpus by pinned commit (kept out of the repo: licences vary).

    .venv/bin/python benchmarks/harbor_public/fetch.py OUT [--termigen 40] [--mirror DIR]
    clawloop eval OUT/public --agent oracle   # and --agent noop; OUT/termigen --agent noop

Why: "runs Harbor tasks without Docker" must hold for tasks written by others. PUBLIC are 21
single-task repositories from GitHub with `task.toml` + `solution/solve.sh` (one task each,
Dockerfiles on python/ubuntu/rust bases); TERMIGEN is zjysteven/terminal-bench-env (3,566
tasks, no solutions), sampled to python-only ones (no apt package besides python3*) with a
fixed seed. Each repository is fetched with `git` at its pinned commit (from `--mirror DIR`
holding `owner+name/repo` git dirs when given, else github.com). The hand-made fixture
tests/fixtures/harbor-offline exercises the same features in CI.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

PUBLIC: tuple[tuple[str, str], ...] = (
    ("ABHISHEK3209/terminal-bench-tasks-finding-triage-task", "95908b225d65e3efe63cdde3dfcaecd8335260a2"),
    ("Aashu95/dynamo-harbor-assessment", "5c896f44c34cbddd88762e41f09479d569b9ad35"),
    ("AbdulGhaffarcs/sha256", "e52bcfc6befff1c7097b49cc6eab490fe16285d5"),
    ("Amol07/reconcile-batch-task", "ee4b6c0493ee3ca7689836151941e38869ad0610"),
    ("Dhruvpatel2684/metrics-aggregation-repair", "de96593c3d69630386703b7e6b1cb957d10cacf4"),
    ("GavinNyamboga/secure-archive-extraction", "30f3a7b7157e3678f05babd192ef6ad9967ae554"),
    ("Haruto921/task_comp", "90e8554d21aec23c4b246a5a7ff58c073c5248ea"),
    ("Jateloz/kenken-task", "6fc13e2a06627a3b4269e157b4cd3620b4629643"),
    ("MMcollab-dotcom/feature-engineering", "3cfb2ee814d40269feed338466bd241bfbb4e9b1"),
    ("McIkenna/python-csv-ingester", "021a5f7494b7123378be49ce48de4b519e82fc94"),
    ("NotJerwee/dynamo-log-report", "e93af89f93e3e8316a5a97ce45b1252db090d3ac"),
    ("Prem-2604/dynamo-log-report-fix", "d7c4328397612824ad05ca3869729aaa1994b10b"),
    ("Prudhvinaraya/Dynamo-fix", "4202a9b1cecc448836feefaf4e7cd5e1dd626fd8"),
    ("SadiqIbrahim-lab/settlement-recon-duplicates", "ffdadd597dbef198e7e99f4ea5c640b9587935ce"),
    ("ShivamGairola2577/json-transform-harbor-task", "5592c4424782a882b1ab7e5f890354d23dd29951"),
    ("Snorkel4-Whitetiger-Dashifu/stresss1", "3c82123d03d642755af4e49e3c27e3fe05ef2cb7"),
    ("ThisisFaizan/churn-leakage-debug", "daff3a8417155afe86cb9d4161045868edafea86"),
    ("Tuosca/csv-cleaner-cli---demo", "8f2b613064294a4ca0a93f94e319d5e9b4c55313"),
    ("Vinibank56/cost-based-query-planner-repair", "b902381183d4764b2e3250d866141a2caab70480"),
    ("Vinibank56/webhook-retry-scheduler-repair", "ef536be838ecda2f09e965393c569c0069bf9e1c"),
    ("WhiteTiger-Creator/lucky5", "bf6537d6a17d5e81452fc8193a1255c4354e5f08"),
)
TERMIGEN = ("zjysteven/terminal-bench-env", "aaad6aeff9b58ab7504a7d239f01f8b11c7174ef")
TERMIGEN_DIR = "environments_harbor"


def _export(repo: str, commit: str, out: Path, mirror: Path | None, subdir: str = "") -> None:
    """`git archive` of `commit` (only `subdir`, if given) extracted into `out`."""
    src = mirror / repo.replace("/", "+") / "repo" if mirror else None
    with tempfile.TemporaryDirectory() as tmp:
        if src is None or not src.is_dir():
            src = Path(tmp) / "repo"
            subprocess.run(["git", "init", "-q", "--bare", str(src)], check=True)
            subprocess.run(["git", "-C", str(src), "fetch", "-q", "--depth", "1",
                            f"https://github.com/{repo}.git", commit], check=True)
        tar = Path(tmp) / "t.tar"
        subprocess.run(["git", "-C", str(src), "archive", "-o", str(tar), commit, *([subdir] if subdir else [])],
                       check=True)
        out.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tar) as t:
            t.extractall(out, filter="data")


def python_only(task: Path) -> bool:
    """No apt package but python3* in the Dockerfile (R, compilers, services need the image)."""
    df = task / "environment" / "Dockerfile"
    if not df.is_file():
        return False
    text = df.read_text(errors="replace")
    pkgs = set()
    for m in re.finditer(r"apt-get install[^&\n]*((?:\\\n[^&\n]*)*)", text):
        pkgs |= {w for w in re.split(r"[\s\\]+", m.group(0)) if w and not w.startswith("-")} - {"apt-get", "install"}
    return all(p.startswith("python") for p in pkgs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--termigen", type=int, default=40, help="python-only TermiGen tasks to sample (0: none)")
    ap.add_argument("--mirror", type=Path, default=None)
    ap.add_argument("--seed", type=int, default=17)
    a = ap.parse_args()
    for repo, commit in PUBLIC:
        dest = a.out / "public" / repo.split("/")[1]
        if not dest.exists():
            _export(repo, commit, dest, a.mirror)
    if a.termigen:
        full = a.out / "termigen-all"
        if not full.exists():
            _export(*TERMIGEN, full, a.mirror, TERMIGEN_DIR)
        tasks = sorted(p for p in (full / TERMIGEN_DIR).iterdir() if python_only(p))
        random.Random(a.seed).shuffle(tasks)
        sample = a.out / "termigen"
        shutil.rmtree(sample, ignore_errors=True)
        for t in sorted(tasks[:a.termigen]):
            shutil.copytree(t, sample / t.name)
    print(f"{len(PUBLIC)} public tasks in {a.out / 'public'}"
          + (f", {a.termigen} TermiGen tasks in {a.out / 'termigen'}" if a.termigen else ""))


if __name__ == "__main__":
    main()
