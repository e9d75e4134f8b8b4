"""The loop end to end: the smoke profile through `dvc repro`, in a scratch copy of the repo.

This is what CI runs as the pipeline check: every stage runs for real (tiny model, bwrap
sandboxes, TRL training), `clawloop check` validates every artifact, a second `dvc repro` does
nothing, and editing one generator dirties only the stages downstream of it.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, check: bool = True, timeout: float = 1200) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "CLAWLOOP_RUNTIME": str(ROOT / ".runtime")}
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {p.returncode}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return p


@pytest.fixture(scope="module")
def smoke_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch copy of the repo (tracked and untracked-not-ignored files) with the smoke
    profile as params.yaml, after one full `dvc repro`."""
    if not (ROOT / ".runtime" / "bin").is_dir():
        pytest.skip("no task runtime: run scripts/setup.sh")
    repo = tmp_path_factory.mktemp("smoke") / "repo"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / rel)
    shutil.copy2(ROOT / "profiles" / "smoke.yaml", repo / "params.yaml")
    # The smoke profile's optional InterCode-Bash suite: the hand-written fixture stands in for
    # the export (git ignores benchmarks/intercode/tasks, as a real export is not ours to commit).
    shutil.copytree(ROOT / "tests" / "fixtures" / "intercode-mini", repo / "benchmarks" / "intercode" / "tasks")
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@localhost"]
    _run(["git", "init", "-q"], repo)
    _run([*git, "add", "-A"], repo)
    _run([*git, "commit", "-qm", "smoke"], repo)
    _run(["dvc", "repro"], repo)
    return repo


def test_smoke_loop_writes_valid_artifacts(smoke_repo: Path) -> None:
    p = _run([str(BIN / "clawloop"), "check", "runs"], smoke_repo)
    assert "0 invalid" in p.stdout
    for i in (0, 1, 2):
        assert (smoke_repo / f"runs/iter-{i}/metrics.json").is_file()
    assert (smoke_repo / "runs/report/report.html").is_file()
    assert (smoke_repo / "runs/transfer/transfer.json").is_file()
    shows = _run(["dvc", "metrics", "show"], smoke_repo).stdout
    assert "heldout_pass_rate" in shows and "vs_base_p" in shows and "gate_p_worse" in shows
    summary = json.loads((smoke_repo / "runs/iter-2/eval/summary.json").read_text())
    assert summary["suites"]["intercode-bash"]["tasks"] == 4                  # the optional suite, present
    assert summary["suites"]["intercode-bash"]["baselines"]["GPT-4"]["tasks"] == 4
    held = json.loads((smoke_repo / "runs/iter-2/heldout.json").read_text())
    assert {k.split("/")[0] for k in held["base"]} == {"shell-core", "intercode-bash"}
    md = (smoke_repo / "runs/report/report.md").read_text()
    assert "against iteration 0" in md or "still iteration 0's" in md
    assert "intercode-bash beside published results" in md and "GPT-4 (published, 10 turns)" in md
    # base vs final at k samples per task (eval.sampled: 2 samples of shell-core's 24 smoke tasks)
    sampled = json.loads((smoke_repo / "runs/sampled/vs-base.json").read_text())
    assert sampled["k"] == 2 and sampled["shell-core"]["tasks"] == 24, sampled
    base = json.loads((smoke_repo / "runs/sampled/base/outcomes.json").read_text())
    assert base["suites"]["shell-core"]["episodes"] == 48
    solved = sum(rate > 0 for key, rate in base["outcomes"].items() if key.startswith("shell-core/"))
    assert sampled["shell-core"]["base_solved"] == solved, sampled
    assert "vs-base.json" in shows and "p_permutation" in shows
    assert "Base vs final policy at 2 samples per task" in md
    # the curriculum's evidence: the trained policy on fresh instances of its pool's top levels
    fresh = summary["suites"]["fresh"]
    assert fresh["tasks"] == len((smoke_repo / "runs/iter-2/pool/fresh.jsonl").read_text().splitlines()) > 0
    report = json.loads((smoke_repo / "runs/iter-2/diagnosis/diagnosis.json").read_text())
    assert report["evidence_suites"] == ["fresh"], report["evidence_suites"]
    # help rollouts (validation.hinted): the frontier tasks tried with a hint, their episodes kept apart
    hinted = json.loads((smoke_repo / "runs/iter-1/validation.json").read_text())["hinted"]
    assert hinted["k"] == 1 and hinted["episodes"] == hinted["tasks"] <= 2, hinted
    if hinted["tasks"]:
        assert list((smoke_repo / "runs/iter-1/validated/hinted").rglob("episodes*.parquet"))
    meta = json.loads((smoke_repo / "runs/iter-1/checkpoint/train_meta.json").read_text())
    assert "hinted" in meta["examples"], meta["examples"]


def test_sampled_final_refuses_a_malformed_base_and_keeps_its_figures(smoke_repo: Path) -> None:
    scratch = smoke_repo / "runs/sampled/bad-base"
    shutil.copytree(smoke_repo / "runs/sampled/base", scratch)
    figures = smoke_repo / "runs/sampled/vs-base.json"
    before = figures.read_bytes()
    outcomes = scratch / "outcomes.json"
    data = json.loads(outcomes.read_text())
    data["temperature"] = "warm"
    outcomes.write_text(json.dumps(data))
    try:
        p = _run([sys.executable, "-m", "stages.evaluate_sampled", "--iteration", "2", "--policy", "runs/iter-2/policy",
                  "--suites", "runs/suites.json", "--base", str(scratch), "--out", "runs/sampled/final",
                  "--metrics", str(figures)], smoke_repo, check=False)
    finally:
        shutil.rmtree(scratch)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "bad-base/outcomes.json: temperature" in p.stderr, p.stderr
    assert figures.read_bytes() == before


def test_second_repro_does_nothing(smoke_repo: Path) -> None:
    p = _run(["dvc", "status"], smoke_repo)
    assert "up to date" in p.stdout, p.stdout
    p = _run(["dvc", "repro"], smoke_repo)
    assert "Running stage" not in p.stdout


def test_editing_a_generator_dirties_only_downstream(smoke_repo: Path) -> None:
    gen = smoke_repo / "clawloop" / "phases" / "synthesize" / "skills" / "files.py"
    original = gen.read_text()
    try:
        gen.write_text(original + "\n# an edit\n")
        status = _run(["dvc", "status"], smoke_repo).stdout
    finally:
        gen.write_text(original)
    changed = {line.rstrip(":") for line in status.splitlines() if line and not line.startswith(("\t", " "))}
    assert "synthesize@1" in changed and "synthesize@2" in changed
    assert not changed & {"bootstrap", "evaluate-base", "diagnose-base"}, changed


def test_editing_a_suite_task_dirties_suites_and_stages_refuse_it_until_rerun(smoke_repo: Path) -> None:
    # Stages depend on runs/suites.json, not the suite directory: only `suites` sees the edit,
    # and a stage run alone before it reruns must not use the edited suite.
    task = sorted((smoke_repo / "benchmarks" / "shell-core").iterdir())[0]
    instruction = task / "instruction.md"
    original = instruction.read_text()
    try:
        instruction.write_text(original + "\nAlso print the date.\n")
        status = _run(["dvc", "status"], smoke_repo).stdout
        p = _run([sys.executable, "-m", "stages.evaluate", "--iteration", "1", "--checkpoint",
                  "runs/iter-1/checkpoint", "--previous", "runs/iter-0", "--suites", "runs/suites.json",
                  "--out", "runs/iter-1/eval"], smoke_repo, check=False)
    finally:
        instruction.write_text(original)
    changed = {line.rstrip(":") for line in status.splitlines() if line and not line.startswith(("\t", " "))}
    assert changed == {"suites"}, status
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "changed since runs/suites.json" in p.stderr and task.name in p.stderr, p.stderr


def test_bad_params_fail_before_work_and_keep_artifacts(smoke_repo: Path) -> None:
    params = smoke_repo / "params.yaml"
    original = params.read_text()
    metrics = smoke_repo / "runs/iter-1/metrics.json"
    before = metrics.read_bytes()
    try:
        params.write_text(original.replace("  batch: 24", "  batch: lots"))
        p = _run([sys.executable, "-m", "stages.evaluate", "--iteration", "1", "--checkpoint",
                  "runs/iter-1/checkpoint", "--previous", "runs/iter-0", "--out", "runs/iter-1/eval"],
                 smoke_repo, check=False)
    finally:
        params.write_text(original)
    assert p.returncode == 2
    assert "rollout.batch" in p.stderr and "Traceback" not in p.stderr
    assert metrics.read_bytes() == before
    assert (smoke_repo / "runs/iter-1/eval").is_dir()
