"""A task's environment layers and uids: what its Dockerfile installs from the registries, and
whether its verifier switches users, as the bwrap sandbox provides them (sandbox/layers.py,
sandbox/_merge.py).

The Harbor importer records them in `task.metadata["sandbox"]`: `layers` (a list of
`{kind, packages}` specs, apt first) and `uids` (the verifier or Dockerfile runs something as
another user). A runner asks `layer_skip_reason` before opening a sandbox (it builds missing
layers into the cache, so a package the registry lacks is a one-line skip naming it) and calls
`attach` on the sandbox right after creating it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from clawloop.core.tasks.shell_lite import default_runtime_dir
from clawloop.core.tasks.task import Task
from sandbox._host import find_bwrap, host_identity
from sandbox.base import SandboxError
from sandbox.layers import Layer, LayerError, LayerSpec, ensure_layer

SANDBOX_KEY = "sandbox"
"""task.metadata key of what the sandbox must provide beyond the runtime (layers, uids)."""


def _record(task: Task) -> dict[str, Any]:
    rec = task.metadata.get(SANDBOX_KEY) if isinstance(task.metadata, dict) else None
    return rec if isinstance(rec, dict) else {}


def layer_specs(task: Task) -> list[LayerSpec]:
    """The task's layer specs (LayerError for a hostile or malformed one)."""
    return [LayerSpec.from_json(x) for x in _record(task).get("layers") or []]


def needs_uids(task: Task) -> bool:
    """Does the task run something as another user (see clawloop.core.tasks.uid_check)?"""
    return bool(_record(task).get("uids"))


@functools.cache
def uids_unavailable() -> str | None:
    """Why this host cannot give a bwrap sandbox several uids (None: it can)."""
    import os
    import shutil

    if os.geteuid() != 0:
        return "several uids need clawloop to run as root (it writes the sandbox's uid map)"
    if not (shutil.which("unshare") and shutil.which("nsenter")):
        return "several uids need util-linux unshare and nsenter"
    try:
        if host_identity(find_bwrap()).run_as is None:
            return "bwrap cannot run as an unprivileged uid here, which several uids build on"
    except SandboxError as e:
        return str(e)
    return None


def layers_for(task: Task, runtime_dir: Path | None = None) -> list[Layer]:
    """The task's layers, built into the cache when missing (LayerError when one cannot be)."""
    rt = runtime_dir or default_runtime_dir()
    return [ensure_layer(spec, rt) for spec in layer_specs(task)]


def layer_skip_reason(task: Task, backend: str, runtime_dir: Path | None = None) -> str | None:
    """Why the task cannot run on `backend` for want of its layers or uids, else None. Builds
    missing layers (cached: the second run of a task finds them)."""
    specs_wanted = bool(_record(task).get("layers"))
    if not specs_wanted and not needs_uids(task):
        return None
    if backend != "bwrap":
        what = "environment layers" if specs_wanted else "several uids"
        return f"needs {what}, which only the bwrap backend provides (or its Docker image)"
    try:
        layers_for(task, runtime_dir)
    except LayerError as e:
        return f"{e} (environment layer)"
    if needs_uids(task):
        why = uids_unavailable()
        if why:
            return f"runs a process as another user; the sandbox maps one uid: {why}"
    return None


def attach(sb: Any, task: Task, runtime_dir: Path | None = None) -> None:
    """Give a freshly created bwrap sandbox the task's layers and uids (a no-op for tasks that
    need neither; other backends are refused earlier by `layer_skip_reason`)."""
    if not _record(task):
        return
    if not hasattr(sb, "add_layers"):
        return
    layers = layers_for(task, runtime_dir or getattr(sb.config, "runtime_dir", None))
    if layers:
        sb.add_layers(layers)
    if needs_uids(task):
        sb.enable_uids()
