"""`clawloop eval`: fixtures run on bwrap; bad tasks are errors naming task and field, the rest runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clawloop.cli import app
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.pool import write_pool
from clawloop.core.trajectory import EpisodeRecord
from clawloop.errors import ClawloopError
from clawloop.phases.evaluate.agent_eval import EvalConfig, evaluate, load_suite, summarize

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "harbor"
runner = CliRunner()


def _last_json(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def test_eval_fixtures_on_bwrap(backend: str, tmp_path: Path) -> None:
    res = runner.invoke(app, ["eval", str(FIXTURES), "--agent", "oracle", "--backend", backend,
                              "--jobs", "2", "--out", str(tmp_path / "run"), "--json"])
    assert res.exit_code == 0, res.output
    s = _last_json(res.output)
    # convert-slides installs libreoffice-impress: an apt layer (built once, cached) on bwrap
    assert (s["tasks"], s["passed"], s["failed"], s["errors"], s["skipped"]) == (3, 3, 0, 0, 0)
    assert s["pass_rate"] == 1.0 and s["suites"]["harbor"]["passed"] == 3
    assert s["skills"]["text_search"]["passed"] == 1 and "data-processing" in s["skills"]
    assert "skill" in res.output and "total" in res.output  # the table
    rows = [json.loads(x) for x in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert {r["name"]: r["outcome"] for r in rows} == {
        "convert-slides": "passed", "region-totals": "passed", "word-count": "passed"}

    res = runner.invoke(app, ["eval", str(FIXTURES / "word-count"), "--agent", "noop", "--json"])
    s = _last_json(res.output)
    assert res.exit_code == 0 and (s["tasks"], s["failed"], s["pass_rate"]) == (1, 1, 0.0)


def _bad_suite(root: Path) -> Path:
    suite = root / "suite"
    for name in ("ok", "bad-toml", "no-instruction", "not-executable", "garbage-reward"):
        shutil.copytree(FIXTURES / "word-count", suite / name)
    (suite / "bad-toml" / "task.toml").write_text("[metadata\nskill = 1\n")
    (suite / "no-instruction" / "instruction.md").unlink()
    (suite / "not-executable" / "tests" / "test.sh").chmod(0o644)
    (suite / "garbage-reward" / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\necho 'one hundred' > /logs/verifier/reward.txt\n")
    return suite


def test_bad_tasks_are_errors_and_the_rest_runs(backend: str, tmp_path: Path) -> None:
    suite = _bad_suite(tmp_path)
    res = runner.invoke(app, ["eval", str(suite), "--agent", "oracle", "--backend", backend, "--json"])
    assert res.exit_code == 0, res.output
    s = _last_json(res.output)
    assert (s["tasks"], s["passed"], s["failed"], s["errors"], s["unloadable"]) == (5, 2, 0, 3, 2)  # test.sh 0644 runs, as in Harbor; errors count the unloadable
    unloadable = {e["task"]: e["reason"] for e in s["unloadable_detail"]}
    assert "bad-toml/task.toml: not valid TOML" in unloadable["bad-toml"]
    assert "no-instruction/instruction.md: file not found" in unloadable["no-instruction"]
    why = {e["task"]: e["reason"] for e in s["errors_detail"]}
    assert list(why) == ["garbage-reward"] and "reward.txt is not a number" in why["garbage-reward"]
    assert "unknown" not in s["skills"] and "" not in s["skills"]  # listed as unloadable, under no skill
    assert "(unloadable)" in res.output and "unloadable suite/bad-toml: " in res.output


def test_pool_suite_with_a_bad_line(backend: str, tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, [load_harbor_task(FIXTURES / "word-count")])
    with pool.open("a") as f:
        f.write("{not json\n")
        f.write('{"instruction": "x"}\n')
    suite = load_suite(pool)
    assert [i.name for i in suite.items] == ["word-count", "line 2", "line 3"]
    assert "pool.jsonl:2: not valid JSON" in (suite.items[1].error or "")
    assert "pool.jsonl:3: verifier: Field required" in (suite.items[2].error or "")
    records, summary = evaluate([pool], "oracle", EvalConfig(backend=backend, jobs=1))
    assert [r.outcome for r in records] == ["passed", "error", "error"]
    assert summary["pass_rate"] == 1.0 and summary["suites"]["pool"]["errors"] == 2


def test_summary_counts_errors_apart() -> None:
    recs = [EpisodeRecord("a", "a", "s", "x", 1, "noop", o) for o in ("passed", "failed", "error", "skipped")]
    s = summarize(recs, "noop", "local")
    assert (s["tasks"], s["passed"], s["failed"], s["errors"], s["skipped"], s["pass_rate"]) == (4, 1, 1, 1, 1, 0.5)


def test_cli_errors(tmp_path: Path) -> None:
    res = runner.invoke(app, ["eval", str(tmp_path / "nowhere"), "--agent", "oracle"])
    assert res.exit_code != 0
    res = runner.invoke(app, ["eval", str(FIXTURES), "--agent", "wizard"])
    assert res.exit_code != 0


def test_schema_import_export_cli(tmp_path: Path) -> None:
    res = runner.invoke(app, ["tasks", "schema"])
    assert res.exit_code == 0 and "instruction" in json.loads(res.output)["properties"]
    pool = tmp_path / "p.jsonl"
    res = runner.invoke(app, ["tasks", "import", str(FIXTURES), "--out", str(pool)])
    assert res.exit_code == 0 and "wrote 3 tasks" in res.output and "1 need environment layers" in res.output
    res = runner.invoke(app, ["tasks", "export", str(pool), "--out", str(tmp_path / "dirs")])
    assert res.exit_code == 0
    again = tmp_path / "p2.jsonl"
    assert runner.invoke(app, ["tasks", "import", str(tmp_path / "dirs"), "--out", str(again),
                               "--source", "harbor"]).exit_code == 0
    assert again.read_text() == pool.read_text()
    res = runner.invoke(app, ["tasks", "import", str(_bad_suite(tmp_path)), "--out", str(tmp_path / "x.jsonl")])
    assert res.exit_code != 0 and not (tmp_path / "x.jsonl").exists()


def test_json_summary_has_timings_and_progress_shows(backend: str) -> None:
    res = runner.invoke(app, ["eval", str(FIXTURES), "--agent", "oracle", "--backend", backend, "--json"])
    assert res.exit_code == 0, res.output
    s = _last_json(res.output)
    assert s["wall_s"] > 0 and s["episodes"] == 3 and s["episodes_per_s"] > 0
    assert "tokens_per_s" not in s  # token figures belong to model agents
    lines = res.output.splitlines()  # stderr is no terminal here: plain lines, the first at once
    assert "[eval oracle] 0/3 episodes (0%) · elapsed 0:00 · ETA ?" in lines
    assert any(x.startswith("[eval oracle] 3/3 episodes (100%) · passed 3 · ") for x in lines)
    assert "3 episodes in " in res.output


def test_model_agent_summary_has_tokens(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from scripted_policy import ScriptedPolicy

    from clawloop.core.agent import model_agent as policy_mod  # where --agent model loads its policy

    submit = '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'
    monkeypatch.setattr(policy_mod, "load_policy", lambda spec: ScriptedPolicy([submit]))
    res = runner.invoke(app, ["eval", str(FIXTURES / "word-count"), "--agent", "model", "--model", "any",
                              "--backend", backend, "--samples", "2", "--json"])
    assert res.exit_code == 0, res.output
    s = _last_json(res.output)
    assert (s["tasks"], s["failed"], s["episodes"]) == (2, 2, 2)
    assert s["completion_tokens"] == 2 * (len(submit.split()) + 1) and s["prompt_tokens"] > 0
    assert s["tokens_per_s"] > 0 and s["episodes_per_s"] > 0
    assert "tokens generated" in res.output and "[eval model] 2/2 episodes (100%) · failed 2 · " in res.output


def test_model_agent_takes_the_loops_harness_from_params(backend: str, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """`eval --agent model` runs the harness of params.yaml's `rollout` section (./params.yaml by default),
    so a CLI figure measures what the loop measures; --no-params gives the schema's defaults. A policy
    that never calls a tool shows it: the episode ends after rollout.max_format_errors replies.
    The policy loads with the params' backend options; the run says which params it used."""
    from scripted_policy import ScriptedPolicy

    from clawloop.core.agent import model_agent as policy_mod

    policy, specs = ScriptedPolicy([], default="I would count the words."), []
    monkeypatch.setattr(policy_mod, "load_policy", lambda spec: specs.append(spec) or policy)
    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text().replace(
        "max_format_errors: 2", "max_format_errors: 1"))
    monkeypatch.chdir(tmp_path)
    base = ["eval", str(FIXTURES / "word-count"), "--agent", "model", "--model", "any", "--backend", backend]
    (tmp_path / "params.yaml").write_text((tmp_path / "params.yaml").read_text().replace("speculate: 8", "speculate: 3"))
    for extra, replies, says in [([], 1, "[params] params.yaml"), (["--no-params"], 2, "[params] schema defaults (--no-params)"),
                                 (["--params", str(ROOT / "params.yaml")], 2, f"[params] {ROOT / 'params.yaml'}")]:
        policy.calls.clear()
        res = runner.invoke(app, [*base, *extra])
        assert res.exit_code == 0, res.output
        assert len(policy.calls) == replies, (extra, policy.calls)
        assert says in res.output, res.output
    # the backend options travel too (rollout.engine's guesses), the backend stays --model's
    assert [(s.backend, s.hf.engine.speculate) for s in specs] == [("hf", 3), ("hf", 8), ("hf", 8)]
    (tmp_path / "params.yaml").write_text("rollout: {max_turns: 0}\n")
    res = runner.invoke(app, base)
    assert isinstance(res.exception, ClawloopError) and "params.yaml" in str(res.exception), res.output


def test_policy_set_reaches_the_backend_options_and_bad_keys_are_named(backend: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from scripted_policy import ScriptedPolicy

    from clawloop.core.agent import model_agent as policy_mod  # where --agent model loads its policy

    specs = []
    submit = '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'
    monkeypatch.setattr(policy_mod, "load_policy", lambda spec: specs.append(spec) or ScriptedPolicy([submit]))
    base = ["eval", str(FIXTURES / "word-count"), "--agent", "model", "--model", "hf:some/dir", "--backend", backend]
    res = runner.invoke(app, [*base, "--policy-set", "hf.engine.forward=fast", "--policy-set", "hf.engine.speculate=8",
                              "--policy-set", "hf.engine.quantize=int8"])
    assert res.exit_code == 0, res.output
    (spec,) = specs
    assert (spec.backend, spec.model, spec.hf.engine.forward, spec.hf.engine.speculate, spec.hf.engine.quantize) == (
        "hf", "some/dir", "fast", 8, "int8")
    for bad, message in [("hf.engin=fast", "--policy-set: hf.engin: unknown key"),
                         ("hf.engine.speculate=-1", "--policy-set: hf.engine.speculate: Input should be greater than or equal to 0"),
                         ("hf.speculate=8", "--policy-set: hf.speculate: moved to engine.speculate"),
                         ("gpu.x=1", "--policy-set: gpu: unknown section"), ("hf", "--policy-set: expected KEY=VALUE")]:
        res = runner.invoke(app, [*base, "--policy-set", bad])  # main() prints it as `error: ...`, exit 2
        assert isinstance(res.exception, ClawloopError) and message in str(res.exception), (bad, res.exception)
    assert len(specs) == 1  # nothing was loaded for the bad ones


def test_nothing_scored_is_null_not_zero() -> None:

    recs = [EpisodeRecord("t", "n", "s", "k", 1, "oracle", "skipped", None, benchmark="claw-eval-live")]
    s = summarize(recs, "oracle", "local")  # type: ignore[arg-type]
    assert s["pass_rate"] is None and s["mean_score"] is None and s["full_score_rate"] is None
    assert s["suites"]["s"]["mean_score"] is None


def _clawloop(*args: str) -> subprocess.CompletedProcess[str]:
    prog = "import sys; from clawloop.cli import main; sys.argv = ['clawloop'] + sys.argv[1:]; main()"
    return subprocess.run([sys.executable, "-c", prog, *args], capture_output=True, text=True, timeout=120)


def test_malformed_pool_lines_stop_eval_unless_skipped(backend: str, tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, [load_harbor_task(FIXTURES / "word-count")])
    with pool.open("a") as f:
        f.write("{not json\n")
    p = _clawloop("eval", str(pool), "--agent", "oracle", "--backend", backend, "--json")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: ") and "pool.jsonl:2: not valid JSON" in p.stderr and "--skip-bad-lines" in p.stderr
    res = runner.invoke(app, ["eval", str(pool), "--agent", "oracle", "--backend", backend, "--json",
                              "--skip-bad-lines"])
    s = _last_json(res.output)
    assert res.exit_code == 0 and (s["passed"], s["unloadable"]) == (1, 1)
    assert s["unloadable_detail"][0]["task"] == "line 2"


def test_error_lines_are_not_wrapped_outside_a_terminal(tmp_path: Path) -> None:
    name = "a-task-with-a-very-long-name-" + "x" * 120
    shutil.copytree(FIXTURES / "word-count", tmp_path / "suite" / name)
    (tmp_path / "suite" / name / "instruction.md").unlink()
    res = runner.invoke(app, ["eval", str(tmp_path / "suite"), "--agent", "oracle"])
    assert isinstance(res.exception, ClawloopError) and "all 1 tasks are unloadable" in str(res.exception)
    line = next(x for x in res.output.splitlines() if x.startswith("unloadable "))
    assert line.endswith(f"{name}/instruction.md: file not found") and f"suite/{name}: " in line
