"""`executor: ray` (clawloop/core/executor.py): the same results as local threads, on one node or two,
and no finished episode lost when a node dies mid-run.

Local-cluster tests share one Ray instance started through `ray_session` (the path a stage takes
without a cluster); the two-node tests run `ray.cluster_utils.Cluster` (a head without CPUs and
two nodes of one CPU each, on a loopback address) and join it through $RAY_ADDRESS, as a driver
joins a `ray start` cluster. Everything skips, with the reason, where Ray cannot start.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clawloop.config.params import Params
from clawloop.core.executor import ExecutorParams, executor_params, ray_available, ray_session, run_all
from clawloop.core.tasks.suite import load_suite
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[1]
SHELL_CORE = ROOT / "benchmarks" / "shell-core"
TIMING = {"duration_s", "tasks_per_s", "executor", "nodes"}
"""Report fields that say how and where a run went, not what it found."""


def test_executor_params() -> None:
    assert executor_params(None).kind == "local"
    assert executor_params("ray") == ExecutorParams(kind="ray")
    assert executor_params({"kind": "ray", "num_cpus": 4}).num_cpus == 4
    with pytest.raises(ClawloopError, match="unknown executor 'dask'"):
        executor_params("dask")
    loop = {"iterations": {"1": {"prev": 0}}, "last": 1}
    assert Params.model_validate({"executor": "ray", "loop": loop}).executor.kind == "ray"
    with pytest.raises(ValueError, match="max_retry"):
        Params.model_validate({"executor": {"kind": "ray", "max_retry": 2}, "loop": loop})


def test_local_executor_keeps_item_order() -> None:
    done: list[int] = []
    out = run_all(lambda x: (time.sleep(0.01 * (5 - x)), x * x)[1], list(range(5)), jobs=3,
                  on_done=lambda k, _r: done.append(k))
    assert [r.value for r in out] == [0, 1, 4, 9, 16] and sorted(done) == list(range(5))
    assert all(r.node is None for r in out)


def test_a_dead_head_is_not_joined(monkeypatch: pytest.MonkeyPatch) -> None:
    """A `ray start` head that was killed leaves its address file: it is not joined (a local
    cluster starts instead), and a dead address named outright fails at once with the reason."""
    _need_ray()
    import ray._private.utils

    from clawloop.core import executor

    monkeypatch.setattr(ray._private.utils, "read_ray_address", lambda *a, **k: "127.0.0.1:9")
    assert executor._started_here() is None
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")
    t0 = time.monotonic()
    with pytest.raises(ClawloopError, match="no Ray head answers at 127.0.0.1:9"), ray_session():
        pass
    assert time.monotonic() - t0 < 10


# ---------------------------------------------------------------------------------- fixtures
def _need_ray() -> None:
    why = ray_available()
    if why is not None:
        pytest.skip(why)


@pytest.fixture(scope="class")
def local_ray() -> Iterator[None]:
    """A local Ray cluster of 2 CPUs, started (and stopped) the way a stage starts one."""
    _need_ray()
    import ray

    env = os.environ.pop("RAY_ADDRESS", None)
    try:
        with ray_session(ExecutorParams(kind="ray", address="local", num_cpus=2)):
            assert ray.is_initialized() and ray.cluster_resources().get("CPU") == 2
            yield
    except ClawloopError as e:
        pytest.skip(f"ray cannot start a local cluster here: {e}")
    finally:
        if env is not None:
            os.environ["RAY_ADDRESS"] = env
    assert not ray.is_initialized()


def _shell_core(n: int) -> list[Path]:
    return sorted(p for p in SHELL_CORE.iterdir() if (p / "task.toml").is_file())[:n]


def _outcomes(records: list[Any]) -> dict[str, tuple[str, float | None]]:
    return {r.name: (r.outcome, r.reward) for r in records}


# -------------------------------------------------------------------------- one local node
@pytest.mark.usefixtures("local_ray")
class TestLocalCluster:
    def test_the_local_cluster_listens_on_loopback_only(self) -> None:
        """Ray turned the 127.0.0.1 asked for into the machine's address, and its GCS, raylet and
        workers listened on every interface (issue #51): a host on the network reached them."""
        import ipaddress

        import psutil

        me = psutil.Process()
        pids = {me.pid, *(c.pid for c in me.children(recursive=True))}
        listening = [c.laddr for c in psutil.net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN and c.pid in pids]

        def loopback(ip: str) -> bool:
            addr = ipaddress.ip_address(ip)
            mapped = getattr(addr, "ipv4_mapped", None)
            return (mapped or addr).is_loopback

        assert len(listening) >= 2, listening  # at least the GCS and the raylet
        assert [a for a in listening if not loopback(a.ip)] == [], listening

    def test_eval_pass_sets_match_local(self, backend: str) -> None:
        from clawloop.phases.evaluate.agent_eval import EvalConfig, evaluate

        tasks = _shell_core(12)
        for agent in ("oracle", "noop"):
            local, s_local = evaluate(tasks, agent, EvalConfig(backend=backend, jobs=2))
            remote, s_ray = evaluate(tasks, agent, EvalConfig(backend=backend, jobs=2, executor="ray"))
            assert _outcomes(remote) == _outcomes(local), agent
            assert [r.name for r in remote] == [r.name for r in local]  # the same order
            assert {k: v for k, v in s_ray.items() if k not in {"wall_s", "episodes_per_s", "executor", "nodes"}} == \
                {k: v for k, v in s_local.items() if k not in {"wall_s", "episodes_per_s", "executor", "nodes"}}
            assert s_ray["executor"] == "ray" and sum(s_ray["nodes"].values()) == len(tasks)
            assert all(r.node for r in remote) and not any(r.node for r in local)
        assert s_local["passed"] == 0 and s_local["failed"] == len(tasks)  # noop: every shell-core task fails

    def test_validation_report_matches_local(self, backend: str) -> None:
        from clawloop.core.tasks.task import Solution
        from clawloop.phases.synthesize.procedural.generate import synthesize
        from clawloop.phases.synthesize.steering import Plan
        from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool

        pool = synthesize(Plan({("files", 1): 3, ("text_search", 1): 3, ("json", 2): 2}), seed=7)
        broken = pool[0].model_copy(update={"solution": Solution(steps=["true"]),  # the oracle fails
                                            "instruction": pool[0].instruction + " Then stop."})
        pool = [*pool, pool[1], broken]  # and an exact duplicate
        params = AgentFreeParams()
        kept_local, rep_local = validate_pool(pool, backend, 2, [], params)
        done: list[int] = []
        kept_ray, rep_ray = validate_pool(pool, backend, 2, [], params, executor="ray", on_done=done.append)
        assert [t.id for t in kept_ray] == [t.id for t in kept_local] and len(kept_local) >= 6
        assert {k: v for k, v in rep_ray.items() if k not in TIMING} == \
            {k: v for k, v in rep_local.items() if k not in TIMING}
        assert rep_local["rejected"].get("duplicate") == 1 and rep_local["rejected"].get("oracle_fails") == 1
        assert rep_ray["executor"] == "ray" and sum(rep_ray["nodes"].values()) == len(done) == len(pool) - 1

    def test_reference_trajectories_match_local(self, backend: str) -> None:
        from clawloop.phases.synthesize.procedural.generate import synthesize
        from clawloop.phases.synthesize.steering import Plan
        from clawloop.phases.train.reference import reference_trajectories

        tasks = synthesize(Plan({("files", 1): 2, ("text_search", 1): 2}), seed=3)
        convs_l, res_l = reference_trajectories(tasks, backend, workers=2)
        convs_r, res_r = reference_trajectories(tasks, backend, workers=2, executor="ray")
        assert [(r.task_id, r.outcome) for r in res_r] == [(r.task_id, r.outcome) for r in res_l]
        assert [c.messages for c in convs_r] == [c.messages for c in convs_l] and convs_l
        assert all(r.node for r in res_r) and not any(r.node for r in res_l)

    def test_cli_executor_flag(self, backend: str, tmp_path: Path) -> None:
        from typer.testing import CliRunner

        from clawloop.cli import app

        out = tmp_path / "run"
        res = CliRunner().invoke(app, ["eval", *map(str, _shell_core(3)), "--backend", backend,
                                       "--executor", "ray", "--json", "--out", str(out)])
        assert res.exit_code == 0, res.output
        summary = json.loads(res.output.strip().splitlines()[-1])
        assert summary["executor"] == "ray" and summary["passed"] == 3
        assert all(json.loads(line)["node"] for line in (out / "episodes.jsonl").read_text().splitlines())
        bad = CliRunner().invoke(app, ["eval", str(SHELL_CORE), "--agent", "model", "--model", "x",
                                       "--executor", "ray"])
        assert isinstance(bad.exception, ClawloopError) and "model agent" in str(bad.exception)


# ------------------------------------------------------------------------------ two nodes
@pytest.fixture(scope="class")
def two_nodes() -> Iterator[dict[str, Any]]:
    """A head without CPUs and two nodes of one CPU each on 127.0.0.2 (a loopback address Ray
    does not rewrite to the machine's own); health checks fast, so a dead node is seen in ~1 s."""
    _need_ray()
    import ray
    from ray.cluster_utils import Cluster

    assert not ray.is_initialized()
    ip = "127.0.0.2"
    try:
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "node_ip_address": ip,
            "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 2,
                               "health_check_initial_delay_ms": 0}})
        nodes = [cluster.add_node(num_cpus=1, node_ip_address=ip) for _ in range(2)]
        cluster.wait_for_nodes()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"ray cannot start a two-node cluster here: {type(e).__name__}: {e}")
    old = os.environ.get("RAY_ADDRESS")
    os.environ["RAY_ADDRESS"] = cluster.address  # joined as a driver joins a `ray start` cluster
    try:
        yield {"cluster": cluster, "nodes": nodes}
    finally:
        os.environ.pop("RAY_ADDRESS", None)
        if old is not None:
            os.environ["RAY_ADDRESS"] = old
        cluster.shutdown()


class TestTwoNodes:
    def test_evaluation_runs_on_both_nodes(self, two_nodes: dict[str, Any], backend: str) -> None:
        import ray

        from clawloop.phases.evaluate.agent_eval import EvalConfig, evaluate

        tasks = _shell_core(8)
        records, summary = evaluate(tasks, "oracle", EvalConfig(backend=backend, executor="ray"))
        assert not ray.is_initialized()  # it joined and left; the cluster runs on
        assert summary["passed"] == len(tasks) and [r.name for r in records] == [p.name for p in tasks]
        workers = {n.node_id for n in two_nodes["nodes"]}
        assert set(summary["nodes"]) == workers == {r.node for r in records}

    def test_a_node_killed_mid_run_loses_no_finished_episode(self, two_nodes: dict[str, Any], backend: str,
                                                             tmp_path: Path) -> None:
        """Kill node B once it has finished an episode and started another: the finished one is
        kept (not rerun), the interrupted one reruns on A (Ray task retry), every result comes
        back in item order."""
        from clawloop.core.agent.oracle import run_episode

        items = [i for i in load_suite(SHELL_CORE).items if i.task is not None][:6]
        marks = tmp_path / "starts"
        marks.mkdir()

        def episode(item: Any) -> Any:  # pickled by value (a closure): starts are marked on the host
            import time as _time

            import ray as _ray

            node = _ray.get_runtime_context().get_node_id()
            (marks / f"{item.name}@{node}@{_time.monotonic()}").touch()
            rec = run_episode(item.task, "oracle", backend, suite=item.suite, name=item.name)
            _time.sleep(1.5)  # long enough to be caught mid-episode
            return rec

        cluster, (a, b) = two_nodes["cluster"], two_nodes["nodes"]
        starts = lambda node: [p.name.split("@")[0] for p in marks.iterdir() if f"@{node}@" in p.name]  # noqa: E731
        finished_on_b: list[str] = []

        def on_done(k: int, ran: Any) -> None:
            if ran.node == b.node_id and not finished_on_b:
                finished_on_b.append(items[k].name)
                deadline = time.monotonic() + 10
                while len(starts(b.node_id)) < 2 and time.monotonic() < deadline:
                    time.sleep(0.05)
                cluster.remove_node(b, allow_graceful=False)

        ran = run_all(episode, items, executor="ray", on_done=on_done)
        assert finished_on_b, "node B never finished an episode"
        assert [r.value.name for r in ran] == [i.name for i in items]
        assert all(r.value.outcome == "passed" for r in ran)
        on_b = starts(b.node_id)
        assert len(on_b) >= 2, "node B was killed before it started a second episode"
        interrupted = [n for n in on_b if n not in finished_on_b]
        by_name = {r.value.name: r for r in ran}
        assert by_name[finished_on_b[0]].node == b.node_id  # kept as it finished there
        assert starts(a.node_id).count(finished_on_b[0]) == 0  # and not run again
        for name in interrupted:  # rerun on A
            assert by_name[name].node == a.node_id and name in starts(a.node_id)
