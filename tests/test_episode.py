"""The episode protocol on a real sandbox: oracle passes, no-op fails, the verifier cannot be faked."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawloop.tasks.environment import TaskEnvironment
from clawloop.tasks.episode import EpisodeRecord, check_oracle, run_episode, run_oracle
from clawloop.tasks.harbor import load_harbor_task
from clawloop.tasks.model import FileSpec, Solution, Task, Verifier
from clawloop.tasks.verifier import read_reward
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


@pytest.mark.parametrize("name", ["region-totals", "word-count"])
def test_fixture_oracle_passes_noop_fails(name: str, backend: str) -> None:
    task = load_harbor_task(FIXTURES / name)
    ok = run_episode(task, "oracle", backend)
    assert (ok.outcome, ok.reward) == ("passed", 1.0), ok.reason or ok.verifier_output
    assert ok.steps and ok.steps[0].command == "bash /solution/solve.sh" and ok.steps[0].exit_code == 0
    no = run_episode(task, "noop", backend)
    assert (no.outcome, no.reward) == ("failed", 0.0)
    row = ok.to_episode_row()
    assert row["passed"] and row["termination"] == "submit" and row["n_turns"] == 1


def test_needs_image_is_skipped_off_docker(backend: str) -> None:
    rec = run_episode(load_harbor_task(FIXTURES / "convert-slides"), "oracle", backend)
    assert rec.outcome == "skipped" and "libreoffice-impress" in (rec.reason or "")


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
    rec = EpisodeRecord("t1", "name", "suite", "files", 2, "noop", "skipped", reason="needs image")
    row = rec.to_episode_row(sample=1, policy_id="p", iteration=3)
    assert row["outcome"] == "skipped" and row["error"] == "needs image" and row["reward"] is None
    assert rec.to_json()["name"] == "name"
