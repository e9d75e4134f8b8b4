"""Docker backend housekeeping: no container outlives its sandbox, even when the owner crashes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import sandbox

pytestmark = pytest.mark.docker

_OWNER = textwrap.dedent("""
    import os, signal, sys
    import sandbox
    sb = sandbox.create("docker")
    print(os.getpid(), flush=True)
    if sys.argv[1] == "crash":
        os._exit(1)                      # no atexit: the container is left behind
    os.kill(os.getpid(), signal.SIGINT)  # KeyboardInterrupt, then atexit cleanup
""")


@pytest.fixture(scope="module")
def docker_client():  # type: ignore[no-untyped-def]
    why = sandbox.unavailable_reason("docker")
    if why:
        pytest.skip(why)
    from sandbox.docker import client

    return client()


def _containers_of(c, pid: str) -> list:  # type: ignore[no-untyped-def]
    return c.containers.list(all=True, filters={"label": ["clawloop.sandbox=1", f"clawloop.pid={pid}"]})


def _owner(mode: str) -> str:
    r = subprocess.run([sys.executable, "-c", _OWNER, mode], capture_output=True, text=True, timeout=60)
    return r.stdout.split()[0]


def test_sigint_removes_the_container(docker_client) -> None:  # type: ignore[no-untyped-def]
    pid = _owner("sigint")
    assert _containers_of(docker_client, pid) == []


def test_reap_removes_leftovers_of_crashed_runs(docker_client) -> None:  # type: ignore[no-untyped-def]
    from sandbox.docker import reap

    pid = _owner("crash")
    assert len(_containers_of(docker_client, pid)) == 1
    assert reap() >= 1
    assert _containers_of(docker_client, pid) == []
