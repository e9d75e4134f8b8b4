"""A Ray cluster as docs/ray.md has a user start it (#79): a head and a worker, each its own
`ray start` process (one CPU each, token auth, loopback 127.0.0.2), joined by the loop through
params.yaml's `executor: {kind: ray, address: HEAD:PORT}`. Agent-free validation and reference
trajectories on it give the verdicts and conversations of local threads, and both nodes run episodes.

tests/test_ray_executor.py runs the same phases on a cluster of `ray.cluster_utils.Cluster` (nodes
started from inside the test process) and kills a node mid-run; this module is the command-line path:
separate processes, each with only the token in its environment, stopped by their own pids (never a
machine-wide `ray stop`), their session files in a temporary dir of their own.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clawloop.core.executor import ray_available

ROOT = Path(__file__).resolve().parents[1]
RAY = Path(sys.executable).parent / "ray"
IP = "127.0.0.2"  # a loopback address Ray does not rewrite to the machine's own
TIMING = {"duration_s", "tasks_per_s", "executor", "nodes"}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _node_ports() -> list[str]:
    """Ports Ray otherwise takes fixed defaults for (52365, ...): another cluster on this machine
    would hold them."""
    return ["--dashboard-agent-listen-port", str(_port()), "--dashboard-agent-grpc-port", str(_port()),
            "--runtime-env-agent-port", str(_port()), "--metrics-export-port", str(_port())]


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each `ray start --block` (it stops the node's processes), worker first."""
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


BLOCKING = "This command will now block forever"
"""What `ray start --block` prints once its node runs (its GCS answers before the head's raylet registered)."""


def _ray_start(args: list[str], log: Path, procs: list[subprocess.Popen[bytes]], tries: int = 2) -> None:
    """`ray start ARGS` as a process of its own, appended to `procs` once its node runs. Tried
    again when it gives up: a node that has not registered 30 s after its start (Ray's fixed limit)
    exits, as happens on a box shared with a long job."""
    for _ in range(tries):
        with log.open("wb") as out:
            proc = subprocess.Popen([str(RAY), "start", *args, *_node_ports()], stdout=out,
                                    stderr=subprocess.STDOUT, cwd=ROOT)
        procs.append(proc)
        deadline = time.monotonic() + 120
        while BLOCKING not in log.read_text(errors="replace") and proc.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.3)
        if BLOCKING in log.read_text(errors="replace") and proc.poll() is None:
            return
        _stop([procs.pop()])
    pytest.skip(f"`ray start` did not come up here in {tries} tries: {log.read_text(errors='replace')[-400:]}")


def _wait_for_nodes(address: str, n: int, timeout: float = 60) -> list[str]:
    import ray

    deadline = time.monotonic() + timeout
    ray.init(address=address, _node_ip_address=IP, include_dashboard=False, log_to_driver=False,
             logging_level="warning", configure_logging=False)
    try:
        while True:
            alive = [node["NodeID"] for node in ray.nodes() if node["Alive"]]
            if len(alive) >= n and ray.cluster_resources().get("CPU") == n:
                return alive
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(alive)} of {n} Ray nodes up after {timeout:.0f} s")
            time.sleep(0.5)
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, Any]]:
    """`ray start --head` and `ray start --address`, one CPU each, as two processes."""
    why = ray_available()
    if why is not None:
        pytest.skip(why)
    temp = Path(tempfile.mkdtemp(prefix="clray", dir="/tmp"))  # short: Ray's socket paths have a length limit
    token = secrets.token_hex(16)
    keys = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_USAGE_STATS_ENABLED")
    old = {k: os.environ.get(k) for k in keys}
    os.environ.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "RAY_USAGE_STATS_ENABLED": "0"})
    _reload_token()
    common = ["--block", "--num-cpus", "1", "--node-ip-address", IP, "--disable-usage-stats"]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        port = _port()
        address = f"{IP}:{port}"
        _ray_start(["--head", "--port", str(port), "--temp-dir", str(temp), "--include-dashboard", "false",
                    "--dashboard-port", str(_port()), *common], temp / "head.log", procs)
        _ray_start(["--address", address, *common], temp / "worker.log", procs)
        try:
            nodes = _wait_for_nodes(address, 2)
        except (TimeoutError, ConnectionError, RuntimeError) as e:
            pytest.skip(f"a `ray start` head + worker did not come up here: {e}; "
                        f"{(temp / 'worker.log').read_text()[-300:]}")
        yield {"address": address, "nodes": nodes, "temp": temp}
    finally:
        _stop(procs)
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _reload_token()
        shutil.rmtree(temp, ignore_errors=True)
    assert all(p.returncode is not None for p in procs)


def _reload_token() -> None:
    """This process's Ray reads its auth mode and token once (any earlier `import ray` or cluster in
    the session): read them again from the environment."""
    try:
        from ray._private.authentication_test_utils import reset_auth_token_state  # ray 2.60
    except ImportError:
        return
    reset_auth_token_state()


def _executor_from_params(tmp_path: Path, address: str) -> Any:
    """The smoke profile with `executor: {kind: ray, address: ...}` appended, as a user edits params.yaml."""
    from clawloop.config.params import load_params

    params = tmp_path / "params.yaml"
    params.write_text((ROOT / "profiles" / "smoke.yaml").read_text()
                      + f"\nexecutor:\n  kind: ray\n  address: {address}\n")
    ex = load_params(params).executor
    assert ex.kind == "ray" and ex.address == address
    return ex


def test_validation_on_a_head_and_a_worker_matches_local_threads(cluster: dict[str, Any], backend: str,
                                                                 tmp_path: Path) -> None:
    import ray

    from clawloop.core.tasks.task import Solution
    from clawloop.phases.synthesize.procedural.generate import synthesize
    from clawloop.phases.synthesize.steering import Plan
    from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool

    executor = _executor_from_params(tmp_path, cluster["address"])
    pool = synthesize(Plan({("files", 1): 3, ("text_search", 1): 2, ("json", 2): 2}), seed=11)
    broken = pool[0].model_copy(update={"solution": Solution(steps=["true"]),  # the oracle fails
                                        "instruction": pool[0].instruction + " Then stop."})
    pool = [*pool, pool[1], broken]  # and an exact duplicate
    params = AgentFreeParams()
    kept_local, rep_local = validate_pool(pool, backend, 2, [], params)
    kept_ray, rep_ray = validate_pool(pool, backend, 2, [], params, executor=executor)
    assert not ray.is_initialized()  # joined and left; the cluster runs on
    assert [t.id for t in kept_ray] == [t.id for t in kept_local] and len(kept_local) >= 5
    assert {k: v for k, v in rep_ray.items() if k not in TIMING} == \
        {k: v for k, v in rep_local.items() if k not in TIMING}
    assert rep_local["rejected"].get("duplicate") == 1 and rep_local["rejected"].get("oracle_fails") == 1
    assert rep_ray["executor"] == "ray" and sum(rep_ray["nodes"].values()) == len(pool) - 1
    assert set(rep_ray["nodes"]) == set(cluster["nodes"])  # the head's CPU and the worker's both ran episodes


def test_reference_trajectories_on_a_head_and_a_worker_match_local(cluster: dict[str, Any], backend: str,
                                                                   tmp_path: Path) -> None:
    from clawloop.phases.synthesize.procedural.generate import synthesize
    from clawloop.phases.synthesize.steering import Plan
    from clawloop.phases.train.reference import reference_trajectories

    executor = _executor_from_params(tmp_path, cluster["address"])
    tasks = synthesize(Plan({("files", 1): 2, ("text_search", 1): 2}), seed=5)
    convs_l, res_l = reference_trajectories(tasks, backend, workers=2)
    convs_r, res_r = reference_trajectories(tasks, backend, workers=2, executor=executor)
    assert [(r.task_id, r.outcome) for r in res_r] == [(r.task_id, r.outcome) for r in res_l]
    assert [c.messages for c in convs_r] == [c.messages for c in convs_l] and convs_l
    assert {r.node for r in res_r} <= set(cluster["nodes"]) and not any(r.node for r in res_l)
