"""Where sandbox episodes run: threads on this machine (`local`) or Ray tasks on a cluster (`ray`).

The agent-free phases run one self-contained function per item (a task in, a verdict or an
episode record out): agent-free validation (`check_in_sandbox`), evaluation of the oracle and
no-op agents (`episode.run_episode`) and reference trajectories (`reference_episode`). `run_all`
maps such a function over the items on the chosen executor and gives the results back in the
items' order, whatever order they finished in, each with the Ray node that ran it.

`local`: `jobs` threads in this process (the sandboxes are subprocesses). `ray`: one Ray task
per item with one CPU each (plus `resources`), at most a few per CPU of the cluster in flight;
a task whose worker or node dies is run again elsewhere (`max_retries`), and results are fetched
as they finish, so a node that dies later takes none of the finished ones with it.

Connecting (`ray_session`): a driver already connected (`ray.is_initialized()`) is used as is;
otherwise `address` (or `$RAY_ADDRESS`) joins that cluster, and with neither, the cluster that
`ray start` runs on this machine is joined (when its head answers), else a local one is started
with `num_cpus` CPUs (default: `jobs`), listening on loopback only, and shut down afterwards. A cluster started with token
authentication (Ray's default) wants `RAY_AUTH_MODE=token` and its token (~/.ray/auth_token or
`$RAY_AUTH_TOKEN`) on every node and driver that joins it. Every node needs the same
checkout and venv at the same path (Ray runs this package there), and the sandbox backend
(bubblewrap) and task runtime (`.runtime`) installed: `scripts/setup.sh` on each.

Policy-driven rollouts (probe, evaluation of a model, GRPO) keep their sandboxes beside the
policy, on the driver: an episode's sandbox lives across its turns, so going remote would take
a stateful actor per sandbox host and a round trip per command on the critical path between two
batched generations, and on a CPU box generation, not the sandbox, is the rollout's cost (docs/ray.md).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from clawloop.config.executor import EXECUTORS, ExecutorParams
from clawloop.errors import ClawloopError

T = TypeVar("T")
R = TypeVar("R")

def executor_params(executor: ExecutorParams | str | dict[str, Any] | None) -> ExecutorParams:
    """`executor` as ExecutorParams: None is local; "ray" or a mapping is validated."""
    if isinstance(executor, ExecutorParams):
        return executor
    if isinstance(executor, str) and executor not in EXECUTORS:
        raise ClawloopError(f"--executor: unknown executor {executor!r} (known: {', '.join(EXECUTORS)})")
    return ExecutorParams.model_validate(executor or {})


@dataclass(frozen=True)
class Ran(Generic[R]):
    """One item's result and where it ran."""

    value: R
    node: str | None = None
    """Hex id of the Ray node that ran it (None on the local executor)."""


def run_all(fn: Callable[[T], R], items: Sequence[T], *, jobs: int = 2,
            executor: ExecutorParams | str | dict[str, Any] | None = None,
            on_done: Callable[[int, Ran[R]], None] | None = None) -> list[Ran[R]]:
    """`fn` over `items` on the executor; results in the items' order.

    `fn` must be picklable for Ray (a module-level function, or a functools.partial of one) and
    must not raise for trouble of one item (an exception stops the whole run, as it would a
    thread pool). `on_done(index, ran)` is called on this thread as each item finishes.
    """
    ex = executor_params(executor)
    if not items:
        return []
    if ex.kind == "local":
        return _run_local(fn, items, jobs, on_done)
    with ray_session(ex, jobs):
        return _run_ray(fn, items, ex, on_done)


def _run_local(fn: Callable[[T], R], items: Sequence[T], jobs: int,
               on_done: Callable[[int, Ran[R]], None] | None) -> list[Ran[R]]:
    out: list[Ran[R] | None] = [None] * len(items)
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="episode") as pool:
        futures = {pool.submit(fn, it): k for k, it in enumerate(items)}
        for fut in as_completed(futures):
            k = futures[fut]
            out[k] = Ran(fut.result())
            if on_done is not None:
                on_done(k, out[k])  # type: ignore[arg-type]
    return out  # type: ignore[return-value]


# ------------------------------------------------------------------------------------- Ray
def ray_available() -> str | None:
    """None when Ray imports, else why not (one line)."""
    try:
        import ray  # noqa: F401
    except Exception as e:  # an ImportError, or a broken install
        return f"ray does not import ({type(e).__name__}: {e})"
    return None


@contextlib.contextmanager
def ray_session(params: ExecutorParams | None = None, jobs: int = 2) -> Iterator[None]:
    """Connect this process to a Ray cluster for the block (see the module doc for which)."""
    import ray

    params = params or ExecutorParams(kind="ray")
    if ray.is_initialized():
        yield
        return
    quiet: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                             "logging_level": "warning", "configure_logging": False}
    address = params.address or os.environ.get("RAY_ADDRESS") or None
    if address is None:  # a cluster `ray start` runs on this machine, if it still answers
        address = _started_here() or "local"
    if address != "local" and not _answers(address, timeout=5):
        raise ClawloopError(f"executor: ray: no Ray head answers at {address} (executor.address or $RAY_ADDRESS)")
    try:
        if address != "local":
            host = address.split("://")[-1].rsplit(":", 1)[0]
            # a cluster on loopback addresses (one machine): this driver's node is there too
            ray.init(address=address, **({"_node_ip_address": host} if host.startswith("127.") else {}), **quiet)
        else:
            with _loopback_node_ip():
                ray.init(address="local", num_cpus=params.num_cpus or jobs, _node_ip_address="127.0.0.1", **quiet)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).splitlines()[0] if str(e) else repr(e)
        raise ClawloopError(f"executor: ray: cannot join or start a cluster (address {address}): {first}") from None
    try:
        yield
    finally:
        ray.shutdown()  # a driver's disconnect; it stops the cluster only when this process started it


@contextlib.contextmanager
def _loopback_node_ip() -> Iterator[None]:
    """A cluster started here listens on loopback only: nothing else needs to reach it.

    Ray (2.60) rewrites a node IP of 127.0.0.1 to the machine's reachable address
    (`services.resolve_ip_for_localhost`), and its GCS, raylet and workers then listen on every
    interface (`ss -ltnp`: `*:PORT`). With its switch for machines that run no clusters (macOS,
    Windows: `ray_constants.ENABLE_RAY_CLUSTER` off) the node IP stays 127.0.0.1, and every
    listener binds 127.0.0.1. Flipped for `ray.init` only; the processes started get the address
    on their command lines. A Ray without the switch starts as it always did."""
    try:
        from ray._private import ray_constants
    except ImportError:
        yield
        return
    before = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    if before is None:
        yield
        return
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before


def _started_here() -> str | None:
    """The address of the cluster the last `ray start` on this machine runs, when its head still
    accepts connections (a killed one leaves its address file behind: `ray.init(address="auto")`
    would then wait for it for minutes)."""
    try:
        from ray._private.utils import read_ray_address  # where `ray start` records it (ray==2.60)

        address = read_ray_address()
    except Exception:  # another Ray version: join only what $RAY_ADDRESS or `executor.address` name
        return None
    return address if address and _answers(address, timeout=1) else None


def _answers(address: str, timeout: float) -> bool:
    """Whether something accepts TCP connections at host:port (a Ray head's GCS port)."""
    host, _, port = address.split("://")[-1].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


_remote_cache: dict[str, Any] = {}


def _call(fn: Callable[[T], R], item: T) -> tuple[R, str]:
    import ray

    return fn(item), ray.get_runtime_context().get_node_id()


def _remote(ex: ExecutorParams) -> Any:
    import ray

    if "call" not in _remote_cache:
        _remote_cache["call"] = ray.remote(_call)
    return _remote_cache["call"].options(num_cpus=1, resources=dict(ex.resources) or None,
                                         max_retries=ex.max_retries, retry_exceptions=False)


def _run_ray(fn: Callable[[T], R], items: Sequence[T], ex: ExecutorParams,
             on_done: Callable[[int, Ran[R]], None] | None) -> list[Ran[R]]:
    import ray

    call = _remote(ex)
    fn_ref = ray.put(fn)  # shipped once, not once per task
    cpus = int(ray.cluster_resources().get("CPU", 1))
    window = max(8, 4 * cpus)  # tasks in flight: enough to keep every CPU busy, few to wait on
    out: list[Ran[R] | None] = [None] * len(items)
    pending: dict[Any, int] = {}
    nxt = 0
    while nxt < len(items) or pending:
        while nxt < len(items) and len(pending) < window:
            pending[call.remote(fn_ref, items[nxt])] = nxt
            nxt += 1
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=None)
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)  # and all others done
        for ref in ready:
            k = pending.pop(ref)
            value, node = ray.get(ref)
            out[k] = Ran(value, node)
            if on_done is not None:
                on_done(k, out[k])  # type: ignore[arg-type]
    return out  # type: ignore[return-value]
