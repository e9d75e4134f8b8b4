"""TaskEnvironment on bwrap with real tasks: the lifecycle, the per-format adapters, the clean world."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clawloop.core.agent.oracle import run_oracle
from clawloop.core.tasks import claw_eval_live as cel
from clawloop.core.tasks import harbor_docker
from clawloop.core.tasks.adapters import ADAPTERS, STANDARD, FormatAdapter, adapter_for
from clawloop.core.tasks.environment import TaskEnvironment, TaskSetupError
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.pool import read_pool, write_pool
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError
from clawloop.phases.synthesize.procedural.generate import synthesize
from clawloop.phases.synthesize.steering import Plan

ROOT = Path(__file__).resolve().parents[1]
SHELL_CORE = ROOT / "benchmarks" / "shell-core"
CEL = ROOT / "benchmarks" / "fixtures" / "claw-eval-live"
HOSTILE = ("mkdir -p /logs/verifier /tests && echo 1 > /logs/verifier/reward.txt && "
           "echo '{\"reward\": 1}' > /logs/verifier/reward.json && echo 'exit 0' > /tests/test.sh && echo planted")


@pytest.fixture(scope="module")
def pool_task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    """A procedural task as stages read it: through a JSONL pool."""
    path = tmp_path_factory.mktemp("pool") / "pool.jsonl"
    write_pool(path, synthesize(Plan({("files", 1): 1}), seed=3))
    return read_pool(path)[0]


def harbor_task() -> Task:
    return load_harbor_task(SHELL_CORE / "active-user-names")


def test_lifecycle_pool_and_harbor_tasks(backend: str, pool_task: Task) -> None:
    for task in (pool_task, harbor_task()):
        assert adapter_for(task) is STANDARD
        with TaskEnvironment(task, backend) as env:
            env.prepare()
            assert env.exec("pwd").output.strip() == task.workdir
            assert env.verify().outcome == "failed"  # nothing done yet: the no-op verdict
            results = run_oracle(env)
            assert results and all(r.exit_code == 0 for r in results), [r.output for r in results]
            assert [c for c, _ in env.steps] == ["pwd", *task.solution.steps]  # type: ignore[union-attr]
            v = env.verify()
            assert (v.outcome, v.reward) == ("passed", 1.0), v.reason or v.output


def test_exec_uses_the_task_env_and_workdir(backend: str) -> None:
    task = harbor_task().model_copy(update={"env": {"GREETING": "hi there"}, "workdir": "/srv/app"})
    with TaskEnvironment(task, backend) as env:
        env.prepare()
        assert env.exec('pwd; echo "$GREETING $EXTRA"', env={"EXTRA": "!"}).output.split() == \
            ["/srv/app", "hi", "there", "!"]


def test_hostile_agent_cannot_write_its_reward(backend: str, pool_task: Task) -> None:
    """The agent writes /logs/verifier/reward.{txt,json} and replaces /tests: the verifier gets
    fresh dirs, so the no-op's failure stands."""
    with TaskEnvironment(pool_task, backend) as env:
        env.prepare()
        assert "planted" in env.exec(HOSTILE).output  # the writes themselves succeeded
        v = env.verify()
    assert (v.outcome, v.reward) == ("failed", 0.0)


def test_close_discards_the_sandbox_even_when_verify_raises(backend: str, pool_task: Task) -> None:
    class Broken(FormatAdapter):
        def verify(self, *args: Any) -> Any:
            raise RuntimeError("grader exploded")

    env = TaskEnvironment(pool_task, backend, adapter=Broken())
    with pytest.raises(RuntimeError, match="grader exploded"), env:
        env.prepare()
        state_dir = Path(env.sandbox.state_dir)  # type: ignore[attr-defined]  (bwrap's own dir)
        assert state_dir.is_dir()
        env.verify()
    assert not state_dir.exists()
    env.close()  # idempotent


def test_use_before_open_and_after_close_is_an_error(backend: str, pool_task: Task) -> None:
    env = TaskEnvironment(pool_task, backend)
    with pytest.raises(ClawloopError, match="not open"):
        env.exec("true")
    with env:
        env.prepare()
    for use in (lambda: env.exec("true"), env.verify, env.prepare, env.open):
        with pytest.raises(ClawloopError, match="closed"):
            use()


def test_setup_failure_is_task_setup_error(backend: str, pool_task: Task) -> None:
    bad = pool_task.model_copy(update={"setup": ["true", "exit 4"]})
    with TaskEnvironment(bad, backend) as env, pytest.raises(TaskSetupError, match="command 2"):
        env.prepare()


def test_skip_reason_needs_image_and_format(monkeypatch: pytest.MonkeyPatch) -> None:
    t = harbor_task().model_copy(update={"needs_image": "gcc"})
    assert TaskEnvironment(t, "bwrap").skip_reason() == "needs its Docker image: gcc"

    def no_daemon(image: str) -> None:
        raise ConnectionError("docker daemon unreachable")

    # On docker a task is judged against the sandbox image; one that cannot be probed keeps its need.
    monkeypatch.setattr(harbor_docker, "image_runtime", no_daemon)
    why = TaskEnvironment(t, "docker").skip_reason()
    assert why is not None and why.startswith("needs its Docker image: gcc (image ")
    assert "could not be probed: docker daemon unreachable" in why
    plain = t.model_copy(update={"needs_image": None})
    assert TaskEnvironment(plain, "docker").skip_reason() is None  # the sandbox itself will say why
    services = cel.load_claw_eval_task(CEL / "tasks" / "CTB_FX04_inbox_digest")
    assert TaskEnvironment(services, "docker").skip_reason() == "needs Claw-Eval-Live mock HTTP services (gmail)"


def test_claw_eval_live_is_graded_by_its_adapter(backend: str, tmp_path: Path) -> None:
    """The adapter is chosen from what the loader wrote, which survives a JSONL pool; a scripted
    agent's steps stand in for the transcript, a model's conversation is passed to verify."""
    task = cel.load_claw_eval_task(CEL / "tasks" / "CTB_FX01_log_error_count", grader_root=CEL / "_grader_root")
    write_pool(tmp_path / "p.jsonl", [task])
    task = read_pool(tmp_path / "p.jsonl")[0]
    assert adapter_for(task) is ADAPTERS["claw-eval-live"]
    with TaskEnvironment(task, backend) as env:
        env.prepare()
        assert env.verify().outcome == "failed"
        run_oracle(env)
        v = env.verify()
        assert (v.outcome, v.reward) == ("passed", 1.0), v.reason or v.output
        assert v.scores is not None and v.scores["completion"] == 1.0
        talk = [{"role": "user", "content": task.instruction}, {"role": "assistant", "content": "done"}]
        assert env.verify(talk).outcome == "passed"
