"""The loop report and the trajectory viewer, on a small hand-made run (two iterations).

The browser test renders the viewer in headless Chromium (Debian's `chromium`) and checks what
a user sees: filtering by failure mode lists exactly the episodes the taxonomy gives that mode,
and an opened episode shows its instruction, commands with output and exit code, and verdict.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from clawloop.artifacts import metrics as artifact_metrics
from clawloop.core.io import write_json, write_jsonl
from clawloop.core.taxonomy import classify
from clawloop.phases.diagnose.diagnose import diagnose
from clawloop.phases.diagnose.synthetic import episode_row, step_row, submit_row, write_trajectories
from clawloop.phases.evaluate import gate as gating
from clawloop.report import ablations
from clawloop.report.build import write_report
from clawloop.report.collect import chain, collect, summary
from clawloop.viewer import load_episodes, write_viewer

BIN = Path(sys.executable).parent


def _messages(instruction: str) -> str:
    return json.dumps([{"role": "system", "content": "harness"}, {"role": "user", "content": instruction}])


def _episodes(it: int) -> tuple[list[dict], list[dict]]:
    """Four held-out episodes per iteration (iteration 1 passes two of them) and one pool episode."""
    eps, steps = [], []

    def add(name: str, skill: str, outcome: str, termination: str, rows: list[dict], **kw: object) -> None:
        eid = f"{name}{it}-0-r"
        eps.append(episode_row(eid, suite=kw.pop("suite", "shell-core"), skill=skill, level=1, iteration=it,
                               outcome=outcome, termination=termination, n_turns=len(rows),
                               messages=_messages(f"Task {name}: do the {skill} thing."),
                               verifier_output=f"verifier says {name}{it}", **kw))
        steps.extend({**r, "episode_id": eid, "step": n} for n, r in enumerate(rows))

    ok = step_row("", 0, "echo hi > a.txt", 0, output="[exit code 0]")
    add("pass", "files", "passed", "submit", [ok, submit_row("", 1)])
    add("fmt", "files", "failed", "format_errors", [step_row("", 0, None, None, format_error=True, content="bad reply")],
        n_format_errors=1)
    add("unk", "git", "failed", "submit", [step_row("", 0, "frobnicate --now", 127, output="frobnicate: not found"),
                                           submit_row("", 1)])
    if it == 0:
        add("slow", "git", "failed", "timeout", [step_row("", 0, "sleep 99", None, timed_out=True)])
    else:
        add("slow", "git", "passed", "submit", [ok, submit_row("", 1)])
    add("pool", "json", "failed", "max_turns", [ok, ok, ok], suite="pool")
    return eps, steps


def _suites(eps: list[dict]) -> dict[str, artifact_metrics.SuiteMetrics]:
    out = {}
    for suite in ("shell-core", "pool"):
        mine = [e for e in eps if e["suite"] == suite]
        passed = sum(e["outcome"] == "passed" for e in mine)
        out[suite] = artifact_metrics.SuiteMetrics(tasks=len(mine), episodes=len(mine), passed=passed, errors=0, skipped=0,
                                       pass_at_1=passed / len(mine), pass_at_k=passed / len(mine),
                                       mean_reward=passed / len(mine), heldout=suite != "pool", graded=len(mine),
                                       format_error_episodes=sum(e["termination"] == "format_errors" for e in mine))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs/ of a two-iteration loop: iteration 0 in the old metrics layout, iteration 1 in the new."""
    runs = tmp_path_factory.mktemp("loop") / "runs"
    for it in (0, 1):
        d = runs / f"iter-{it}"
        eps, steps = _episodes(it)
        for suite in ("shell-core", "pool"):
            ids = {e["episode_id"] for e in eps if e["suite"] == suite}
            write_trajectories(d / "eval" / suite, [e for e in eps if e["suite"] == suite],
                               [s for s in steps if s["episode_id"] in ids])
        suites = _suites(eps)
        promoted_best = (True, 0.5 if it else 0.25)
        if it == 0:  # before eval/summary.json: suites inside metrics.json, no interval
            write_json(d / "metrics.json", {"iteration": 0, "suites": {k: v.model_dump() for k, v in suites.items()},
                                            "heldout_pass_rate": 0.25, "promoted": True, "best_heldout_pass_rate": 0.25,
                                            "policy_from": 0, "episodes_per_s": 1.0, "wall_s": 10.0})
        else:
            artifact_metrics.write_metrics(d / "metrics.json", gating.headline(it, suites, promoted=promoted_best[0],
                                                                  best=promoted_best[1], policy_from=it, wall_s=12.0))
            artifact_metrics.write_metrics(d / "eval" / "summary.json", artifact_metrics.EvalDetail(iteration=it, suites=suites,
                                                                             episodes_per_s=1.0, wall_s=12.0))
            write_json(d / "pool" / "manifest.json", {"iteration": 1, "seed": 1, "tasks": 3, "budgets": {"procedural": 3},
                       "routines": {"procedural": {"report": "runs/iter-0/diagnosis/diagnosis.json", "plan": {
                           "total": 3, "knob_fraction": 0.5,
                           "quotas": [{"skill": "git", "level": 1, "n": 2}, {"skill": "files", "level": 2, "n": 1}],
                           "knobs": {"git": {"names_with_spaces": True, "distractors": 0}},
                           "decisions": {"git": {"skill": "git", "action": "hold", "target_level": 1, "share": 0.67,
                                                 "weakness": 1.0, "reason": "failing", "assessed_level": 1}}}}}})
            write_jsonl(d / "validated" / "valid.jsonl", [{"skill": "git", "level": 1}, {"skill": "files", "level": 2}])
            write_json(d / "train.json", {"method": "sft", "sft_runtime_s": 30.0})
        diagnose([d / "eval"], out_dir=d / "diagnosis", iteration=it,
                 previous=runs / "iter-0" / "diagnosis" / "diagnosis.json" if it else None)
    return runs


def test_summary_answers_did_it_improve(runs: Path) -> None:
    data = collect(runs)
    s = summary(data)
    assert s is not None and s["best"] == 1 and s["first"] == 0
    assert s["gain"] == pytest.approx(0.25)
    assert "overlap" in s["verdict"]        # 1/4 vs 2/4: far within sampling noise
    row0 = s["rows"][0]                     # the old layout gets its interval recomputed
    assert row0["low"] == pytest.approx(0.0456, abs=1e-3) and row0["n"] == 4
    assert [r["gate"] for r in s["rows"]] == ["start", "promoted"]
    assert s["rows"][1]["wall"] == {"evaluate": 12.0, "train": 30.0}


def test_summary_names_the_suite_that_made_the_gate_keep_the_policy(runs: Path) -> None:
    data = collect(runs)
    data["metrics"][1] = {**data["metrics"][1], "promoted": False, "policy_from": 0,
                          "gate_worse_suites": ["intercode-bash"]}
    s = summary(data)
    assert s is not None and s["rows"][1]["gate"] == "rejected (kept iteration 0; worse on intercode-bash)"


def test_chain_puts_recommendation_beside_synthesis(runs: Path) -> None:
    (c,) = chain(collect(runs))
    assert c["iteration"] == 1 and c["from"] == 0 and c["conditioned"]
    git = next(r for r in c["rows"] if r["skill"] == "git")
    assert git["rec"] is not None and git["rec"]["skill"] == "git"      # from diagnosis 0
    assert git["decision"]["action"] == "hold" and git["quotas"] == {1: 2}
    assert git["knobs"] == ["names_with_spaces"]
    assert git["rate"]["n"] == 2


def test_report_files(runs: Path, tmp_path: Path) -> None:
    page = write_report(runs, tmp_path / "report")
    html = page.read_text()
    assert html.index("Did the agent get better") < html.index("Diagnosis → synthesis") < html.index("Pass rate per skill")
    assert "Best: iteration 1" in html and "+0.250" in html
    assert 'href="trajectories/index.html#group=iteration%201&amp;mode=format_error"' in html
    md = (tmp_path / "report" / "report.md").read_text()
    assert "**Best: iteration 1" in md and "| git |" in md
    csv = (tmp_path / "report" / "pass_rate.csv").read_text().splitlines()
    assert csv[0] == "iteration,suite,pass_at_1,ci_low,ci_high" and csv[1].startswith("0,heldout,0.2500,0.04")
    assert (tmp_path / "report" / "trajectories" / "data" / "index.js").is_file()


def test_ablations_from_dvc_exp_show() -> None:
    def node(name: str, params: dict, rate: float) -> dict:
        return {"rev": name, "name": name, "data": {"params": {"params.yaml": {"data": params}}, "metrics": {
            "runs/iter-1/metrics.json": {"data": {"heldout_pass_rate": 0.0}},
            "runs/iter-3/metrics.json": {"data": {"heldout_pass_rate": rate, "heldout_ci_low": 0.1,
                                                  "heldout_ci_high": 0.5, "best_heldout_pass_rate": rate}}}}}
    base = {"synthesis": {"conditioning": True, "routines": {"procedural": 1.0}}, "train": {"method": "sft"}}
    uniform = {**base, "synthesis": {**base["synthesis"], "conditioning": False}}
    both = {**base, "synthesis": {"conditioning": True, "routines": {"procedural": 0.5, "hindsight": 0.5}}}
    grpo = {**base, "train": {"method": "sft+grpo"}}
    entries = [{**node("workspace", base, 0.3), "experiments": None},
               {**node("main", base, 0.3), "experiments": [{"revs": [node("exp-a", uniform, 0.2)]},
                                                           {"revs": [node("exp-b", both, 0.35)]},
                                                           {"revs": [node("exp-c", grpo, 0.4)]}]}]
    rows = ablations.parse(entries)
    assert [(r["name"], r["ablation"], r["iteration"]) for r in rows] == [
        ("workspace", "default", 3), ("main", "default", 3), ("exp-a", "uniform", 3),
        ("exp-b", "both-routines", 3), ("exp-c", "sft+grpo", 3)]
    assert rows[2]["rate"] == 0.2 and rows[2]["params"]["synthesis.conditioning"] == "false"
    assert ablations.read(Path("/nonexistent")) == []
    assert not any(r["experiment"] for r in ablations.parse(entries[:1]))   # no experiment: read() shows none


def test_ablations_run_in_clones_of_their_own(runs: Path, tmp_path: Path) -> None:
    """`clawloop report --ablation DIR`: a variant that ran in its own clone (learning.py --repro
    --set ...) is a row of the table, read from its params.yaml and last metrics.json."""
    from typer.testing import CliRunner

    from clawloop.cli import app
    from clawloop.errors import ClawloopError

    grpo = tmp_path / "abl-grpo" / "repo"
    for it, rate in ((1, 0.0), (3, 0.0)):
        write_json(grpo / "runs" / f"iter-{it}" / "metrics.json", {
            "heldout_pass_rate": rate, "heldout_ci_low": 0.0, "heldout_ci_high": 0.051,
            "best_heldout_pass_rate": 0.0, "format_error_episodes": 72})
    (grpo / "params.yaml").write_text("train:\n  method: grpo\nsynthesis:\n  conditioning: true\n")
    (row,) = ablations.from_clones([grpo])
    assert (row["name"], row["ablation"], row["iteration"], row["format_errors"]) == ("abl-grpo", "grpo", 3, 72)
    res = CliRunner().invoke(app, ["report", str(runs), "--out", str(tmp_path / "r"), "--ablation", str(grpo)])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## Ablations" in md and "| abl-grpo | grpo | 3 |" in md
    # Beside the loop's own checkout, the report's run is the first row, the one to compare with.
    (runs.parent / "params.yaml").write_text("train:\n  method: sft\n")
    try:
        res = CliRunner().invoke(app, ["report", str(runs), "--out", str(tmp_path / "r1"), "--ablation", str(grpo)])
    finally:
        (runs.parent / "params.yaml").unlink()
    assert res.exit_code == 0, res.output
    table = (tmp_path / "r1" / "report.md").read_text().split("## Ablations")[1]
    assert table.index("| this run | default | 1 |") < table.index("| abl-grpo | grpo | 3 |")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "params.yaml").write_text("train: {}\n")
    with pytest.raises(ClawloopError, match="empty: no runs/iter-N/metrics.json"):
        ablations.from_clones([tmp_path / "empty"])
    p = subprocess.run([str(BIN / "clawloop"), "report", str(runs), "--out", str(tmp_path / "r2"),
                        "--ablation", str(tmp_path / "missing")], capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "missing" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "r2").exists()


def test_viewer_reads_eval_jsonl_and_cli(tmp_path: Path) -> None:
    """`clawloop eval --out DIR` writes EpisodeRecords to DIR/episodes.jsonl; the viewer reads them too."""
    rec = {"task_id": "t1", "name": "hello", "suite": "shell-core", "skill": "files", "level": 1, "agent": "noop",
           "outcome": "failed", "reward": 0.0, "reason": None, "duration_s": 0.1, "verifier_output": "FAILED x",
           "steps": [{"command": "true", "exit_code": 0, "output": "", "timed_out": False, "duration_s": 0.0}]}
    write_jsonl(tmp_path / "eval" / "episodes.jsonl", [rec])
    (ep,) = load_episodes(tmp_path / "eval")
    assert ep["verifier_output"] == "FAILED x" and ep["steps"][0]["command"] == "true"
    assert ep["modes"] == ["wrong_result"]
    p = subprocess.run([str(BIN / "clawloop"), "view", str(tmp_path / "eval"), "--out", str(tmp_path / "v")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "1 episodes" in p.stdout and (tmp_path / "v" / "index.html").is_file()


# ------------------------------------------------------------------------------ in a real browser

def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("no Chromium here (Debian: apt-get install chromium): the viewer is not checked in a browser")


def _dom(page: Path, fragment: str) -> str:
    """The page's DOM after its scripts ran (and loaded their chunk files), as headless Chromium sees it."""
    p = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                        "--dump-dom", page.resolve().as_uri() + "#" + fragment],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def _listed(dom: str) -> list[str]:
    body = dom[dom.index("<tbody>"):dom.index("</tbody>")]
    return re.findall(r'<tr data-id="([^"]+)"', body)


def test_viewer_in_headless_chromium(runs: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_viewer([("iteration 0", runs / "iter-0" / "eval"), ("iteration 1", runs / "iter-1" / "eval")], site)
    page = site / "index.html"
    episodes = load_episodes(runs / "iter-0" / "eval") + load_episodes(runs / "iter-1" / "eval")
    assert len(_listed(_dom(page, ""))) == len(episodes) == 10

    for mode in ("timeout", "unknown_command", "format_error"):
        want = sorted(e["id"] for e in episodes if mode in classify(
            {"outcome": e["outcome"], "termination": e["termination"], "n_format_errors": 0}, e["steps"]))
        assert want, mode
        assert sorted(_listed(_dom(page, f"mode={mode}"))) == want, mode
    assert _listed(_dom(page, "group=" + quote("iteration 1") + "&mode=timeout")) == []
    assert sorted(_listed(_dom(page, "outcome=passed&suite=shell-core"))) == ["pass0-0-r", "pass1-0-r", "slow1-0-r"]

    dom = _dom(page, "ep=unk0-0-r")
    detail = dom[dom.index('id="detail"'):]
    for text in ("Task unk: do the git thing.", "$ frobnicate --now", "frobnicate: not found", "exit 127",
                 "verifier says unk0", "unknown_command"):
        assert text in detail, text


def test_the_report_shows_what_the_harness_learned(runs: Path, tmp_path: Path) -> None:
    """A playbook iteration's artifact, written by the train stage's own writer, becomes a readable
    section: tips added and pruned, the reflector's verdicts, the harness edits tried and kept."""
    from clawloop.core.agent.playbook import HarnessEdits, Playbook, PlaybookEntry, PrunedEntry
    from clawloop.phases.train.harness_search import HarnessSearch, Trial
    from clawloop.phases.train.playbook import write_artifact
    from clawloop.phases.train.reflect import EditRecord, Reflection

    mine = tmp_path / "runs"
    shutil.copytree(runs, mine)
    tip = PlaybookEntry(id="t1", kind="tip", skill="git", text="Run git status before committing.",
                        added_iteration=1, baseline=0.25, evidence="reflector: git 1/4")
    book = Playbook(iteration=1, token_budget=384, tokens=12, entries=[tip],
                    pruned=[PrunedEntry(id="t0", kind="tip", failure_mode="wrong_result", reason="it did not help")],
                    harness=HarnessEdits(format_hint="json_fence"))
    refl = Reflection(iteration=1, edits=[
        EditRecord(edit={"op": "add", "skill": "git", "text": tip.text}, status="accepted", reason="tip for git"),
        EditRecord(edit={"op": "add", "text": "Write to out/q3.txt."}, status="dropped",
                   reason="task-specific: names a path ('out/q3.txt')")])
    search = HarnessSearch(iteration=1, after=book.harness, dev_tasks=["a", "b", "c"], trials=[
        Trial(edits=book.harness, change="format_hint configured -> json_fence", why="format errors in 40% of episodes",
              kept=True, verdict="+2 tasks of 3, p = 0.25"),
        Trial(edits=HarnessEdits(observation_chars=4000), change="observation_chars 2000 -> 4000",
              why="outputs cut", verdict="no change")])
    write_artifact(mine / "iter-1" / "playbook", book, reflection=refl, search=search)
    write_artifact(mine / "iter-0" / "playbook", Playbook(token_budget=384))  # weight-only: no section row

    data = collect(mine)
    assert list(data["learned"]) == [1]
    page = write_report(mine, tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    section = md[md.index("## What the harness learned"):md.index("## Diagnosis")]
    assert "### Iteration 1: 1 tip, 0 worked examples, 12/384 tokens; harness format_hint json_fence" in section
    assert "Reflector (model): 1 edit accepted, 1 dropped" in section and "names a path ('out/q3.txt')" in section
    assert "- added tip (git): Run git status before committing." in section
    assert "- pruned tip (wrong_result): it did not help" in section
    assert "| format_hint configured -> json_fence | rules | yes | +2 tasks of 3, p = 0.25 |" in section
    assert "| observation_chars 2000 -> 4000 | rules | no | no change |" in section
    html = page.read_text()
    assert html.index("What the harness learned") < html.index("Diagnosis → synthesis")
    assert 'href="#learned"' in html and "held-in dev tasks" not in html.split("What the harness learned")[0]
    plain = write_report(runs, tmp_path / "plain").read_text()  # no playbook artifacts: no section
    assert "What the harness learned" not in plain


def test_the_report_gives_the_transfers_paired_test(runs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    write_json(copy / "transfer" / "transfer.json", {
        "base": "smollm2-135m-instruct", "pass_at_1": {"first": 0.1, "final": 0.2}, "tasks": {"first": 9, "final": 9},
        "gain": 0.1, "paired": {"synth-heldout": {"tasks": 112, "before": 0.1, "after": 0.2, "diff": 0.1,
                                                  "diff_low": 0.02, "diff_high": 0.18, "gained": 14, "lost": 3,
                                                  "p_mcnemar": 0.0127}}})
    write_report(copy, tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| synth-heldout | 112 | 0.100 | 0.200 | +0.100 [+0.020, +0.180] | 14 | 3 | 0.0127 |" in md
    assert "0.0127" in (tmp_path / "report" / "report.html").read_text()
