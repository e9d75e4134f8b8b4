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


def test_root_is_writable_over_a_read_only_system(docker_client) -> None:  # type: ignore[no-untyped-def]
    """As bwrap's copy-on-write root: `WORKDIR /app` and /etc work; /usr and the runtime do not."""
    from sandbox.docker import _system_binds, image_name

    if not _system_binds(docker_client.images.get(image_name()), False):
        pytest.skip(f"{image_name()} is not one overlay2 layer: the root stays read-only")
    with sandbox.open("docker") as sb:
        r = sb.exec("mkdir -p /app/x && echo a > /etc/clawloop-probe && echo ok; "
                    "touch /usr/bin/clawloop-probe /opt/clawloop-runtime/probe 2>&1; true")
        assert "ok" in r.output and r.output.count("Read-only file system") == 2, r.output
        sb.write_file("/app/x/f", "hi")
        assert sb.read_file("/app/x/f") == b"hi"
        with pytest.raises(sandbox.SandboxError, match="system dir"):
            sb.write_file("/etc/clawloop-probe", "x")
    with sandbox.open("docker") as sb:  # nothing outlives the container
        assert sb.exec("test -e /app || test -e /etc/clawloop-probe; echo $?").output.strip() == "1"


def _harbor_task(root, dockerfile: str):  # type: ignore[no-untyped-def]
    from clawloop.tasks.harbor import load_harbor_task

    (root / "environment").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "task.toml").write_text('version = "1.0"\n')
    (root / "instruction.md").write_text("Do it.\n")
    (root / "environment" / "Dockerfile").write_text(dockerfile)
    (root / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    return load_harbor_task(root)


def test_harbor_tasks_are_judged_against_the_image(docker_client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An apt package the host has but the image lacks (gcc on bwrap's /usr, say) skips the task
    on docker, naming the package and the base image; what the image has runs."""
    from clawloop.tasks.environment import image_skip_reason as skip_reason
    from clawloop.tasks.harbor_docker import image_runtime
    from clawloop.tasks.shell_lite import detect_runtime
    from sandbox.docker import image_name

    have = image_runtime(image_name()).apt_packages
    missing = sorted(p for p in detect_runtime().apt_packages - have if p.isalnum())
    if not missing:
        pytest.skip("the image has every apt package of the host")
    ok = _harbor_task(tmp_path / "ok", "FROM python:3.11-slim\nRUN apt-get install -y procps\nWORKDIR /app\n")
    assert skip_reason(ok, "docker") is None and skip_reason(ok, "bwrap") is None
    base = "clawloop-no-such-base:1"
    t = _harbor_task(tmp_path / "gcc", f"FROM {base}\nRUN apt-get install -y {missing[0]}\n")
    assert skip_reason(t, "bwrap") is None  # the host has it
    why = skip_reason(t, "docker") or ""
    assert f"'{missing[0]}'" in why and f"base image {base} is not available" in why, why
