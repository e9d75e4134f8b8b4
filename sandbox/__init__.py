"""Isolated workspaces for running untrusted shell commands. Knows nothing of clawloop.

    import sandbox
    with sandbox.open(backend="bwrap", memory_mb=1024) as sb:
        sb.write_file("/workspace/a.txt", "hi\n")
        r = sb.exec("wc -l a.txt", timeout=10)

Backends: `bwrap` (default; bubblewrap namespaces), `docker` (docker SDK, needs a daemon and the
`clawloop-sandbox` image), `local` (plain subprocess in a temp dir: NOT isolated, for trusted
tasks and debugging).

The backends are imported where a sandbox is made or checked (`create`, `unavailable_reason`), not
at the top: every `sandbox.*` import runs this file, and most importers need only the types of
sandbox.base.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sandbox.base import ExecResult, Sandbox, SandboxConfig, SandboxError, truncate_output

BACKENDS = ("bwrap", "docker", "local")
"""Names accepted by `open(backend=...)`."""
ISOLATED_BACKENDS = ("bwrap", "docker")

__all__ = ["BACKENDS", "ISOLATED_BACKENDS", "ExecResult", "Sandbox", "SandboxConfig", "SandboxError",
           "cannot_verify", "create", "open", "truncate_output", "unavailable_reason"]


def create(backend: str = "bwrap", config: SandboxConfig | None = None, **config_fields: Any) -> Sandbox:
    """Create a sandbox; the caller must `close()` it. Prefer `open` (a context manager)."""
    if config is not None and config_fields:
        raise SandboxError("pass either config or config fields, not both")
    if config is None:
        try:
            config = SandboxConfig(**config_fields)
        except Exception as e:  # pydantic's message is multi-line: keep the first error only
            errors = getattr(e, "errors", None)
            if callable(errors) and errors():
                first = errors()[0]
                loc = ".".join(str(x) for x in first.get("loc", ()))
                raise SandboxError(f"bad sandbox config: {loc}: {first.get('msg')}") from None
            raise SandboxError(f"bad sandbox config: {e}") from None
    from sandbox import bwrap, docker, local

    if backend == "bwrap":
        return bwrap.BwrapSandbox(config)
    if backend == "docker":
        return docker.DockerSandbox(config)
    if backend == "local":
        return local.LocalSandbox(config)
    raise SandboxError(f"unknown sandbox backend {backend!r} (choose from {', '.join(BACKENDS)})")


def unavailable_reason(backend: str) -> str | None:
    """None when `backend` can run here, else a one-line reason (for test skips and doctor)."""
    from sandbox import bwrap, docker

    if backend == "local":
        return None
    if backend == "bwrap":
        try:
            bwrap.find_bwrap()
        except SandboxError as e:
            return str(e)
        return None
    if backend == "docker":
        why = docker.unavailable_reason()
        return f"docker backend unavailable: {why}" if why else None
    return f"unknown sandbox backend {backend!r}"


def cannot_verify(backend: str) -> str | None:
    """Why `backend` can run no verifier (a one-line reason), None when it can: only the isolated
    backends give a verifier a world of its own (the local one would grade on the host's paths)."""
    if backend == "local":
        from sandbox.local import CANNOT_VERIFY

        return CANNOT_VERIFY
    return None


@contextmanager
def open(backend: str = "bwrap", config: SandboxConfig | None = None,  # noqa: A001
         **config_fields: Any) -> Iterator[Sandbox]:
    """Open a sandbox for a `with` block; it is closed (processes killed, files deleted) on exit."""
    sb = create(backend, config, **config_fields)
    try:
        yield sb
    finally:
        sb.close()
