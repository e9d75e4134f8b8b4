"""Locate the task runtime: the python venv mounted read-only at /opt/clawloop-runtime in sandboxes.

`scripts/setup.sh` builds it in `<repo>/.runtime` from /usr/bin/python3 (so that it runs inside
a sandbox, where only /usr is visible); `CLAWLOOP_RUNTIME` points elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from clawloop.errors import ClawloopError

ENV_VAR = "CLAWLOOP_RUNTIME"
REPO_RUNTIME = Path(__file__).resolve().parents[2] / ".runtime"


def runtime_dir(required: bool = False) -> Path | None:
    """The runtime venv: $CLAWLOOP_RUNTIME if set (it must exist), else `<repo>/.runtime` if built.

    Returns None when there is none and `required` is False; sandboxes then have the system
    python3 only. Raises ClawloopError for a bad $CLAWLOOP_RUNTIME, or when required and absent.
    """
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        p = Path(explicit).expanduser()
        if not (p / "bin").is_dir():
            raise ClawloopError(f"{ENV_VAR}={explicit}: not a python venv (no bin/ directory)")
        return p.resolve()
    if (REPO_RUNTIME / "bin").is_dir():
        return REPO_RUNTIME
    if required:
        raise ClawloopError(f"no task runtime: run scripts/setup.sh (builds {REPO_RUNTIME}) or set {ENV_VAR}")
    return None
