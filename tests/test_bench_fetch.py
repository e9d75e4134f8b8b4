"""The fetch scripts of ClawGym-Bench, SkillsBench and Claw-Eval-Live (#79), run on hand-written
repositories in the upstream layouts (tests/fixtures/bench-fetch/: a git dir built here, served as
`--mirror`), then loaded and evaluated as a user does after a fetch. No network, no real mirror.

A mirror may lack objects (the real one leaves out large blobs): a task with any object missing
is left out whole and listed in PIN.json, never exported half."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from clawloop.core.tasks.formats import detect_format, load_suite_any

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "bench-fetch"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def fetch_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fetch_{name}", ROOT / "benchmarks" / name / "fetch.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def git(d: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(d), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(d), *args], check=True, capture_output=True, text=True, env=env).stdout.strip()


def mirror_of(tmp: Path, repo: str, tree: Path, *, lose: tuple[str, ...] = ()) -> tuple[Path, str]:
    """`tree` committed into tmp/mirror/owner+name/repo (a git dir, as the fetch tool leaves one),
    with the objects of the paths in `lose` deleted; (mirror dir, commit)."""
    work = tmp / "work" / repo.replace("/", "+")
    shutil.copytree(tree, work)
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "fixture")
    commit = git(work, "rev-parse", "HEAD")
    objs = [git(work, "rev-parse", f"HEAD:{p}") for p in lose]
    dest = tmp / "mirror" / repo.replace("/", "+") / "repo"
    dest.parent.mkdir(parents=True)
    (work / ".git").rename(dest)
    for obj in objs:
        (dest / "objects" / obj[:2] / obj[2:]).unlink()
    return tmp / "mirror", commit


def clawloop(*args: str) -> dict:
    prog = "import sys; from clawloop.cli import main; sys.argv = ['clawloop'] + sys.argv[1:]; main()"
    r = subprocess.run([sys.executable, "-c", prog, *args, "--json", "-j", "2"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_clawgym_exports_the_eval_split(tmp_path: Path) -> None:
    mod = fetch_module("clawgym")
    lost = f"{mod.SPLIT}/task_0001/reward/reward.sh"
    mirror, commit = mirror_of(tmp_path, mod.REPO, FIX / "clawgym", lose=(lost,))
    out = tmp_path / "out"
    pin = mod.export(out, mirror, commit)
    assert pin == {"repo": mod.REPO, "commit": commit, "split": mod.SPLIT, "tasks": 1,
                   "incomplete": {"task_0001": ["task_0001/reward/reward.sh"]}}
    assert json.loads((out / "PIN.json").read_text()) == pin
    assert sorted(p.name for p in out.iterdir()) == ["PIN.json", "_upstream", "task_0000"]  # no train split
    assert (out / "task_0000" / "reward" / "reward.sh").stat().st_mode & 0o777 == 0o755
    assert detect_format(out) == "clawgym"
    (task,) = load_suite_any(out).tasks
    assert task.files["/root/.openclaw/workspace/input/words.txt"].data() == b"alder\nbirch\ncedar\n"
    assert task.solution is None  # ClawGym ships none: the oracle skips


def test_skillsbench_exports_with_and_without_skills(tmp_path: Path) -> None:
    mod = fetch_module("skillsbench")
    mirror, commit = mirror_of(tmp_path, mod.REPO, FIX / "skill-usage",
                               lose=("tasks/clip-silence/environment/input.bin",))
    on, off = tmp_path / "on", tmp_path / "off"
    pin = mod.export(on, mirror, commit)
    assert (pin["tasks"], pin["skills"], list(pin["incomplete"])) == (1, "on", ["clip-silence"])
    assert mod.export(off, mirror, commit, skills="off")["skills"] == "off"
    assert (on / "word-frequency" / "environment" / "skills" / "word-freq" / "SKILL.md").is_file()
    assert not (off / "word-frequency" / "environment" / "skills").exists()
    dockerfile = (off / "word-frequency" / "environment" / "Dockerfile").read_text()
    assert "COPY poem.txt /root/poem.txt" in dockerfile
    assert not any("skills" in line for line in dockerfile.splitlines() if line.startswith("COPY"))
    assert detect_format(on) == detect_format(off) == "harbor"
    (with_skills,) = load_suite_any(on).tasks
    (without,) = load_suite_any(off).tasks
    assert "/root/.claude/skills/word-freq/SKILL.md" in with_skills.files
    assert not any("skills" in path for path in without.files)
    assert mod.without_skills("COPY skills /root/.codex/skills\nADD ./skills/x /y\nCOPY skills.txt /z\n") == \
        "COPY skills.txt /z\n"


def test_claw_eval_live_exports_a_grader_root(tmp_path: Path) -> None:
    mod = fetch_module("claw_eval_live")
    tree = tmp_path / "tree"
    shutil.copytree(FIX / "claw-eval-live", tree)
    shutil.copytree(ROOT / "benchmarks" / "fixtures" / "claw-eval-live" / "_grader_root" / "src", tree / "src")
    mirror, commit = mirror_of(tmp_path, mod.REPO, tree)
    out = tmp_path / "out"
    pin = mod.export(out, mirror, commit)
    assert (pin["tasks"], pin["incomplete"]) == (3, {})
    assert pin["workspace_tasks"] == ["CTB_T01_line_total", "CTB_T03_log_triage"]  # T02 needs the gmail service
    assert (out / "src" / "liveclaw_500" / "graders" / "base.py").is_file() and (out / "LICENSE").is_file()
    assert detect_format(out / "tasks") == "claw-eval-live"
    suite = load_suite_any(out / "tasks", grader_root=out)
    by_name = {i.name: i for i in suite.items}
    assert by_name["CTB_T01_line_total"].task is not None and by_name["CTB_T01_line_total"].task.needs_image is None
    assert "mock HTTP services (gmail)" in by_name["CTB_T02_mail_digest"].task.needs_image
    assert "project/logs/run.log not found" in by_name["CTB_T03_log_triage"].error  # never committed upstream


@needs_bwrap
def test_exports_evaluate_as_suites(tmp_path: Path) -> None:
    """From each fetch to the figures the README reports: no-op fails every runnable task (each
    grader ran in the verifier sandbox and scored it), the SkillsBench oracle passes with its
    skills and not without them, and what cannot run is skipped or unloadable with its reason."""
    gym, sb, cel = fetch_module("clawgym"), fetch_module("skillsbench"), fetch_module("claw_eval_live")
    tree = tmp_path / "cel-tree"
    shutil.copytree(FIX / "claw-eval-live", tree)
    shutil.copytree(ROOT / "benchmarks" / "fixtures" / "claw-eval-live" / "_grader_root" / "src", tree / "src")
    out = tmp_path / "out"
    for mod, fixture, dest, kw in ((gym, FIX / "clawgym", out / "clawgym", {}),
                                   (sb, FIX / "skill-usage", out / "skillsbench", {}),
                                   (sb, FIX / "skill-usage", out / "skillsbench-noskills", {"skills": "off"}),
                                   (cel, tree, out / "cel", {})):
        mirror, commit = mirror_of(tmp_path / dest.name, mod.REPO, fixture)
        mod.export(dest, mirror, commit, **kw)

    noop = clawloop("eval", str(out / "clawgym"), str(out / "skillsbench"), str(out / "cel" / "tasks"),
                    "--grader-root", str(out / "cel"), "--agent", "noop")
    s = noop["suites"]
    assert (s["clawgym"]["failed"], s["clawgym"]["passed"], s["clawgym"]["errors"]) == (2, 0, 0)
    assert s["clawgym"]["mean_score"] == round(1 / 6, 4)  # input_untouched: 1 of 3 checks, one task of two
    assert (s["skillsbench"]["failed"], s["skillsbench"]["passed"]) == (2, 0)
    live = s["tasks"]
    assert (live["failed"], live["passed"], live["skipped"], live["unloadable"]) == (1, 0, 1, 1)
    assert live["mean_score"] == 0.0

    oracle = clawloop("eval", str(out / "skillsbench"), str(out / "skillsbench-noskills"), "--agent", "oracle")
    assert oracle["suites"]["skillsbench"]["passed"] == 2
    assert (oracle["suites"]["skillsbench-noskills"]["passed"], oracle["suites"]["skillsbench-noskills"]["failed"]) \
        == (1, 1)  # word-frequency's reference solution runs the skill's script
    gym_oracle = clawloop("eval", str(out / "clawgym"), "--agent", "oracle")
    assert gym_oracle["skipped"] == 2 and {d["reason"] for d in gym_oracle["skipped_detail"]} == {
        "no reference solution"}
