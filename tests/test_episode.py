"""The episode protocol on a real sandbox: oracle passes, no-op fails, the verifier cannot be faked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clawloop.core.agent.oracle import check_oracle, run_episode, run_oracle
from clawloop.core.tasks.environment import TaskEnvironment
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.core.tasks.verifier import read_reward
from clawloop.core.trajectory import EpisodeRecord
from sandbox.base import ExecResult

FIXTURES = Path(__file__).parent / "fixtures" / "harbor"


def make_task(test: str, steps: list[str] | None = None, **kw: object) -> Task:
    return Task(instruction="Create /workspace/done containing ok.",
                verifier=Verifier(files={"test.sh": FileSpec.of("#!/bin/bash\nmkdir -p /logs/verifier\n" + test,
                                                                0o755)}),
                solution=Solution(steps=steps or ["echo ok > done"]), **kw)  # type: ignore[arg-type]


CHECK = 'if [ "$(cat /workspace/done 2>/dev/null)" = ok ]; then echo 1 > /logs/verifier/reward.txt; fi\n'
CHECK0 = CHECK + "[ -f /logs/verifier/reward.txt ] || echo 0 > /logs/verifier/reward.txt\n"


def test_read_reward(tmp_path: Path) -> None:
    assert read_reward(tmp_path) == (None, "the verifier wrote no reward file")
    (tmp_path / "reward.txt").write_text(" 0.25\n")
    assert read_reward(tmp_path) == (0.25, None)
    (tmp_path / "reward.txt").write_text("yes!")
    assert read_reward(tmp_path)[1] == "reward.txt is not a number ('yes!')"
    (tmp_path / "reward.json").write_text('{"reward": 1, "extra": 2}')  # both must parse and agree
    assert read_reward(tmp_path)[1] == "reward.txt is not a number ('yes!')"
    (tmp_path / "reward.txt").write_text("1\n")
    assert read_reward(tmp_path) == (1.0, None)
    (tmp_path / "reward.txt").write_text("0\n")
    assert "disagree" in (read_reward(tmp_path)[1] or "")
    (tmp_path / "reward.txt").unlink()
    assert read_reward(tmp_path) == (1.0, None)
    (tmp_path / "reward.json").write_text("{oops")
    assert read_reward(tmp_path) == (None, "reward.json is not valid JSON")
    (tmp_path / "reward.json").write_text('{"score": 1}')
    assert "no numeric 'reward'" in (read_reward(tmp_path)[1] or "")
    (tmp_path / "reward.json").write_text('{"reward": NaN}')
    assert read_reward(tmp_path)[0] is None


@pytest.mark.parametrize("name", ["region-totals", "word-count", "convert-slides"])  # the last: an apt layer
def test_fixture_oracle_passes_noop_fails(name: str, backend: str) -> None:
    task = load_harbor_task(FIXTURES / name)
    ok = run_episode(task, "oracle", backend)
    assert (ok.outcome, ok.reward) == ("passed", 1.0), ok.reason or ok.verifier_output
    assert ok.steps and ok.steps[0].command == "bash /solution/solve.sh" and ok.steps[0].exit_code == 0
    no = run_episode(task, "noop", backend)
    assert (no.outcome, no.reward) == ("failed", 0.0)
    row = ok.to_row()
    assert row["passed"] and row["termination"] == "submit" and row["n_turns"] == 1


def test_what_no_layer_can_give_is_skipped_off_docker(backend: str, tmp_path: Path) -> None:
    rec = run_episode(make_task(CHECK, needs_image="prebuilt image acme/solver:1 and no Dockerfile"), "oracle",
                      backend)
    assert rec.outcome == "skipped" and "acme/solver:1" in (rec.reason or "")
    task = tmp_path / "convert-slides"
    shutil.copytree(FIXTURES / "convert-slides", task)
    (task / "environment" / "Dockerfile").write_text(
        "FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y clawloop-no-such-package\n")
    rec = run_episode(load_harbor_task(task), "oracle", backend)
    assert rec.outcome == "skipped" and "clawloop-no-such-package" in (rec.reason or ""), rec.reason


def test_agent_cannot_fake_the_reward(backend: str) -> None:
    fake = ("mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && "
            "echo '{\"reward\": 1.0}' > /logs/verifier/reward.json && echo planted")

    def faker(env: TaskEnvironment) -> list[ExecResult]:
        r = env.exec(fake, timeout=10)
        assert r.exit_code == 0 and "planted" in r.output  # the write itself succeeded
        r2 = env.exec("mkdir -p /tests && echo 'def test(): pass' > /tests/conftest.py", timeout=10)
        return [r, r2]

    silent = run_episode(make_task(CHECK), faker, backend)  # a verifier that writes nothing on failure
    assert silent.outcome == "error" and "no reward file" in (silent.reason or "")
    loud = run_episode(make_task(CHECK0), faker, backend)
    assert (loud.outcome, loud.reward) == ("failed", 0.0)
    assert run_episode(make_task(CHECK), "oracle", backend).outcome == "passed"


def test_garbage_reward_and_setup_failure_are_errors(backend: str) -> None:
    rec = run_episode(make_task("echo 'yes!' > /logs/verifier/reward.txt\n"), "oracle", backend)
    assert rec.outcome == "error" and "reward.txt is not a number" in (rec.reason or "")
    bad = make_task(CHECK, setup=["true", "exit 3"])
    rec = run_episode(bad, "oracle", backend)
    assert rec.outcome == "error" and "setup failed" in (rec.reason or "") and "command 2" in (rec.reason or "")
    slow = make_task("sleep 5; echo 1 > /logs/verifier/reward.txt\n",
                     limits={"verifier_timeout_s": 0.5})
    rec = run_episode(slow, "oracle", backend)
    assert rec.outcome == "error" and "timed out" in (rec.reason or "")


def test_pieces_workdir_env_and_harbor_envs(backend: str) -> None:
    task = load_harbor_task(FIXTURES / "word-count")  # [verifier] env and [solution] env matter here
    with TaskEnvironment(task, backend) as env:
        env.prepare()
        assert env.exec("pwd; echo $LANG").output.split() == ["/app", "C.UTF-8"]
        assert env.verify().outcome == "failed"
        results = run_oracle(env)
        assert [r.exit_code for r in results] == [0]
        v = env.verify()
        assert (v.outcome, v.reward) == ("passed", 1.0)


def test_check_oracle_fast_path(backend: str) -> None:
    for task in (load_harbor_task(FIXTURES / "word-count"), make_task(CHECK0, setup=["mkdir -p sub"])):
        with TaskEnvironment(task, backend) as env:
            res = check_oracle(env, noop_first=True)
        assert res.noop is not None and res.noop.outcome == "failed"
        assert (res.oracle.outcome, res.oracle.reward) == ("passed", 1.0)
        with TaskEnvironment(task, backend) as env:
            assert check_oracle(env).oracle.outcome == "passed"


def test_record_json_shape() -> None:
    rec = EpisodeRecord("t1", "name", "suite", "files", 2, "noop", "skipped", reason="needs image", sample=1,
                        policy_id="p", iteration=3)
    row = rec.to_row()
    assert row["outcome"] == "skipped" and row["error"] == "needs image" and row["reward"] is None
    assert rec.to_json()["name"] == "name"


def test_one_record_for_scripted_and_model_episodes() -> None:
    """Oracle/no-op and model rollouts share EpisodeRecord and Step: one to_row for EPISODE_SCHEMA
    (and STEP_SCHEMA), one to_json for episodes.jsonl whatever the agent."""
    import json

    from clawloop.core.trajectory import EPISODE_SCHEMA, STEP_SCHEMA, Step

    scripted = EpisodeRecord("t", "n", "s", "files", 1, "oracle", "passed", 1.0, verifier_output="ok",
                             steps=[Step(0, tool="bash", command="ls", exit_code=0, output="a\n")])
    model = EpisodeRecord("t", "t", "s", "files", 1, "model", "failed", 0.0, episode_id="t-0-abc",
                          termination="max_turns", policy_id="iter-1", iteration=1,
                          messages=[{"role": "user", "content": "é"}],
                          steps=[Step(0, "<tool_call>", tool="bash", command="ls", exit_code=None, tokens=3),
                                 Step(1, "hm", format_error=True, error_kind="no_tool_call")])
    for rec in (scripted, model):
        assert list(rec.to_row()) == EPISODE_SCHEMA.names
        assert all(list(r) == STEP_SCHEMA.names for r in rec.step_rows())
        assert set(rec.to_json()) == {"task_id", "name", "suite", "skill", "level", "agent", "outcome", "reward",
                                      "reason", "duration_s", "verifier_output", "steps", "prompt_tokens",
                                      "completion_tokens", "unloadable", "node", "timing"}
    s_row, m_row = scripted.to_row(), model.to_row()
    assert (s_row["episode_id"], s_row["policy_id"], s_row["termination"]) == ("t-0-oracle", "oracle", "submit")
    assert json.loads(s_row["messages"])[0]["tool_calls"][0]["function"]["arguments"] == '{"command":"ls"}'
    assert (m_row["episode_id"], m_row["policy_id"], m_row["termination"], m_row["n_turns"]) == \
        ("t-0-abc", "iter-1", "max_turns", 2)
    assert m_row["messages"] == '[{"role": "user", "content": "é"}]' and m_row["verifier_output"] is None
    assert [s["command"] for s in model.to_json()["steps"]] == ["ls"]       # turns that ran a command
    assert model.to_json()["steps"][0]["exit_code"] == -1
    assert EpisodeRecord("t", "n", "s", "k", 1, "oracle", "error", reason="x", benchmark="clawgym").to_json()[
        "benchmark"] == "clawgym"
