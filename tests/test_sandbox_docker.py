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
    from clawloop.core.tasks.harbor import load_harbor_task

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
    from clawloop.core.tasks.environment import image_skip_reason as skip_reason
    from clawloop.core.tasks.harbor_docker import image_runtime
    from clawloop.core.tasks.shell_lite import detect_runtime
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


# --------------------------------------------------------------------------- task images
_BUILT = """FROM {base}
# {token}
RUN mkdir -p /opt/built && echo built > /opt/built/marker
WORKDIR /app
COPY data.txt /app/data.txt
RUN echo seeded > /app/seed.txt && ln -s /usr/bin/python3 /usr/local/bin/python-link
"""
_CHECK = """#!/bin/bash
ok=1
[ "$(cat /opt/built/marker)" = built ] || { echo "no built marker"; ok=0; }
[ "$(cat /app/seed.txt)" = seeded ] || { echo "no seed"; ok=0; }
[ "$(cat /app/out.txt 2>/dev/null)" = "$(cat /app/data.txt)" ] || { echo "no agent work"; ok=0; }
[ "$PWD" = /app ] || { echo "cwd $PWD"; ok=0; }
echo $ok > /logs/verifier/reward.txt
"""


def _built_task(root, dockerfile: str, solve: str | None = "cp data.txt out.txt\n"):  # type: ignore[no-untyped-def]
    from clawloop.core.tasks.harbor import load_harbor_task

    for d in ("environment", "tests", "solution"):
        (root / d).mkdir(parents=True)
    (root / "task.toml").write_text('version = "1.0"\n[environment]\nbuild_timeout_sec = 300\n')
    (root / "instruction.md").write_text("Copy data.txt to out.txt.\n")
    (root / "environment" / "Dockerfile").write_text(dockerfile)
    (root / "environment" / "data.txt").write_text("payload\n")
    (root / "tests" / "test.sh").write_text(_CHECK)
    if solve:
        (root / "solution" / "solve.sh").write_text(solve)
    return load_harbor_task(root)


def test_a_task_with_a_local_base_image_runs_in_its_own_built_image(docker_client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """FROM an image the daemon has: the task's Dockerfile is built (tag = content hash), the
    oracle passes and the no-op fails in it, a second run reuses the image, /usr stays read-only."""
    import uuid

    from clawloop.core.agent.oracle import run_episode
    from clawloop.core.tasks.environment import TaskEnvironment
    from clawloop.core.tasks.harbor_docker import task_image
    from sandbox.docker import image_name

    base = image_name()
    # A fresh token: this test builds (a cached image from an earlier run would prove nothing).
    task = _built_task(tmp_path / "t", _BUILT.format(base=base, token=uuid.uuid4().hex))
    tag = None
    try:
        rec = run_episode(task, "oracle", "docker")
        assert (rec.outcome, rec.reward) == ("passed", 1.0), (rec.reason, rec.verifier_output)
        tag = task_image(task)
        assert tag and tag.startswith("clawloop-task:")
        img = docker_client.images.get(tag)
        assert len(img.attrs["RootFS"]["Layers"]) == 1 and img.attrs["Config"]["WorkingDir"] == "/app"
        noop = run_episode(task, "noop", "docker")
        assert noop.outcome == "failed" and "no agent work" in noop.verifier_output, noop
        again = docker_client.images.get(task_image(task) or "")
        assert (again.id, again.attrs["Created"]) == (img.id, img.attrs["Created"])  # not rebuilt
        with TaskEnvironment(task, "docker") as env:
            env.prepare()
            r = env.exec("pwd; cat seed.txt; touch /usr/bin/probe 2>&1; echo x > /etc/probe && echo etc-ok")
            assert r.output.splitlines()[:2] == ["/app", "seeded"] and "Read-only" in r.output, r.output
            assert "etc-ok" in r.output
    finally:
        if tag:
            docker_client.images.remove(tag, force=True)


def test_task_image_build_failures_and_missing_bases(docker_client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A failing RUN is outcome "error" with the build log's gist (no traceback); a base image
    the daemon lacks keeps the generic image, skipping what it cannot run and naming the base."""
    from clawloop.core.agent.oracle import run_episode
    from clawloop.core.tasks.environment import image_skip_reason as skip_reason
    from sandbox.docker import image_name

    bad = _built_task(tmp_path / "bad", f"FROM {image_name()}\nRUN echo broken-$((6*7)) >&2; exit 3\n")
    rec = run_episode(bad, "oracle", "docker")
    assert rec.outcome == "error" and "\n" not in (rec.reason or ""), rec.reason
    assert "environment/Dockerfile: docker build failed" in (rec.reason or "") \
        and "broken-42" in (rec.reason or ""), rec.reason  # the step's own output
    base = "clawloop-no-such-base:1"
    gone = _built_task(tmp_path / "gone", f"FROM {base}\nRUN apt-get install -y clawloop-no-such-package\n")
    why = skip_reason(gone, "docker") or ""
    assert f"base image {base} is not available" in why, why
    assert run_episode(gone, "oracle", "docker").outcome == "skipped"
