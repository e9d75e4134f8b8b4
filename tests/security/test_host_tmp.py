"""No backend deletes or changes a host file it did not make (#75 A).

The verifier's prelude cleans the agent's links out of /tmp and /var/tmp. On the local backend
those were the host's: `clawloop eval --backend local` deleted every symlink under the host's
temp dirs (a virtualenv's python links, another job's files). Here each backend grades a real
shell-core task in a private mount namespace whose /tmp and /var/tmp hold canary links: every
canary survives, the isolated backends pass the oracle, and the local backend refuses in one line
before running anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sandbox
from clawloop.core.tasks.environment import refuse_unverifiable
from clawloop.errors import ClawloopError

from .conftest import available

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "benchmarks" / "shell-core" / "crlf-to-lf"

# Runs as the namespace's first command: fresh tmpfs on both temp dirs, canary links (one to a
# dir, one dangling, one nested), then the CLI, then a listing of what is left.
SCRIPT = textwrap.dedent("""\
    set -eu
    real=/run/clawloop-canary.$$; mkdir -p "$real"; mount --bind /tmp "$real"
    # the sandboxes' own temp files where a docker daemon (outside this namespace) sees them too
    export TMPDIR=/run/clawloop-canary-work.$$; mkdir -p "$TMPDIR"; chmod 1777 "$TMPDIR"
    mount -t tmpfs canary /tmp && mount -t tmpfs canary /var/tmp
    case "$REPO" in /tmp/*)  # a checkout under /tmp (CI's clone may be one) stays in view
      mkdir -p "$REPO" && mount --bind "$real/${REPO#/tmp/}" "$REPO" ;; esac
    mkdir -p /tmp/job/bin /var/tmp/job
    ln -s /usr/bin/python3 /tmp/job/bin/python3; ln -s /nowhere /tmp/dangling; ln -s /etc /var/tmp/job/etc
    set +e
    "$PY" -m clawloop eval "$TASK" --agent oracle --backend "$BACKEND" --json > /dev/shm/cl-out-$$ 2> /dev/shm/cl-err-$$
    echo "rc=$?"
    echo "--- stdout"; tail -n 1 /dev/shm/cl-out-$$; echo "--- stderr"; cat /dev/shm/cl-err-$$
    rm -f /dev/shm/cl-out-$$ /dev/shm/cl-err-$$
    echo "--- links"; find /tmp /var/tmp -xdev -type l | sort
    umount "$real" && rmdir "$real" && rm -rf "$TMPDIR"
""")
CANARIES = ["/tmp/dangling", "/tmp/job/bin/python3", "/var/tmp/job/etc"]


def _in_private_tmp(backend: str) -> str:
    """The script's output, run in a mount namespace of its own (root only: `unshare --mount`)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a private mount namespace needs root and unshare(1)")
    env = {**os.environ, "PY": sys.executable, "TASK": str(TASK), "BACKEND": backend, "REPO": str(REPO)}
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", SCRIPT],
                       capture_output=True, text=True, env=env, timeout=600, cwd=REPO)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _links(out: str) -> list[str]:
    return out.split("--- links\n", 1)[1].split()


@pytest.mark.parametrize("backend", [*sandbox.ISOLATED_BACKENDS, "local"])
def test_no_backend_deletes_host_links(backend: str) -> None:
    if backend != "local":
        available(backend)
    out = _in_private_tmp(backend)
    assert _links(out) == CANARIES, out
    rc = int(out.split("rc=", 1)[1].split()[0])
    stderr = out.split("--- stderr\n", 1)[1].split("--- links\n", 1)[0]
    if backend == "local":  # refused before any episode, in one line
        assert rc != 0 and stderr.count("\n") == 1 and "cannot grade a task" in stderr, out
        assert "Traceback" not in out
    else:
        assert rc == 0, out
        assert '"passed": 1' in out.split("--- stdout\n", 1)[1], out


def test_local_backend_refuses_every_grading_path() -> None:
    """Every command that grades checks the backend first; the sandbox refuses a verifier too."""
    with pytest.raises(ClawloopError, match="cannot grade"):
        refuse_unverifiable("local")
    refuse_unverifiable("bwrap")
    with sandbox.open("local") as sb, pytest.raises(sandbox.SandboxError, match="cannot grade"), sb.trusted_root():
        pass
