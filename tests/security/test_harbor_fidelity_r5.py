"""Issue #75 D1: the task world's /etc starts from the image, not from accounts of clawloop's own.

A public Harbor task's Dockerfile says `RUN useradd -m -u 1000 agent` (as many do on python
bases). The sandbox's /etc template named a `user` account at uid and gid 1000, which no python
or Debian image has, so that RUN exited 4 ("UID 1000 is not unique") and the task errored in
setup: oracle and no-op alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clawloop.core.agent.oracle import run_episode
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.layers import uids_unavailable
from sandbox.base import Sandbox

IMAGE_FIRST_UID = 1000
"""The uid (and gid) `useradd` gives an image's first user, and the one Dockerfiles name with
`-u 1000`: free in every Debian and python image."""

DOCKERFILE = f"""FROM python:3.12-slim
WORKDIR /app
COPY data/ /app/data/
RUN useradd -m -u {IMAGE_FIRST_UID} agent && chown -R agent:agent /app
"""
"""Modelled on the public task: a service user at uid 1000 owns the app dir."""

TEST_SH = f"""#!/bin/bash
mkdir -p /logs/verifier
if [ "$(id -u agent)" = {IMAGE_FIRST_UID} ] && [ "$(stat -c %U /home/agent)" = agent ] \\
   && su agent -c 'test -w /app/data' && [ "$(cat /app/data/count.txt 2>/dev/null)" = 3 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def _write_task(root: Path) -> Path:
    """A Harbor task directory: count the lines of /app/data/rows.txt into /app/data/count.txt."""
    files = {
        "instruction.md": "Write the number of lines of /app/data/rows.txt to /app/data/count.txt.\n",
        "task.toml": 'version = "1.0"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n',
        "environment/Dockerfile": DOCKERFILE,
        "environment/data/rows.txt": "a\nb\nc\n",
        "solution/solve.sh": "#!/bin/bash\nsu agent -c 'wc -l < /app/data/rows.txt > /app/data/count.txt'\n",
        "tests/test.sh": TEST_SH,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_no_account_holds_the_images_first_uid(sb: Sandbox) -> None:
    """A fresh sandbox names no user or group at 1000 (before: `user:x:1000`)."""
    r = sb.exec(f"getent passwd {IMAGE_FIRST_UID}; getent group {IMAGE_FIRST_UID}; echo end")
    assert r.output.strip() == "end", r.output


def test_a_dockerfile_useradd_at_uid_1000_builds_and_its_reference_passes(episode_backend: str,
                                                                          tmp_path: Path) -> None:
    """The public task's `useradd -m -u 1000 agent` runs in setup; the oracle passes, no-op fails
    (before: both errored in setup, "setup command 2 failed with status 4")."""
    if why := uids_unavailable():
        pytest.skip(f"several uids: {why}")
    task = load_harbor_task(_write_task(tmp_path / "useradd-uid-1000"))
    assert task.needs_image is None and any(f"useradd -m -u {IMAGE_FIRST_UID} agent" in s for s in task.setup)
    oracle = run_episode(task, "oracle", episode_backend)
    noop = run_episode(task, "noop", episode_backend)
    assert oracle.outcome == "passed", (oracle.reason, oracle.verifier_output)
    assert noop.outcome == "failed", (noop.reason, noop.verifier_output)
