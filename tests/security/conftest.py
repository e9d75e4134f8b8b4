"""Fixtures for the attack tests: one sandbox per isolated backend, with tight limits.

`local` is not isolated and is excluded. Docker cases skip (with the reason, visible in
`pytest -ra`) when the SDK, the daemon or the image is missing: scripts/docker-setup.sh.

bwrap runs commands two ways, each attacked on its own: `bwrap` through its exec server (one
container for all commands), `bwrap-oneshot` in a container per command (what it does for the
first command after open() or a mount change; its pid 1 is bwrap's own init, which a command
can ptrace, and which the host kills after every command).
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import sandbox
from clawloop.core.runtime import runtime_dir

LIMITS: dict[str, Any] = {"memory_mb": 512, "max_processes": 64, "max_file_size_mb": 8, "cpu_seconds": 1,
                          "disk_mb": 64}


@functools.cache
def unavailable(backend: str) -> str | None:
    """Why `backend` cannot run here (None: it can); computed once per test run."""
    return sandbox.unavailable_reason(backend)


def available(backend: str) -> str:
    """`backend` (its mode after a dash), or a skip with the reason it cannot run here."""
    why = unavailable(backend.split("-")[0])
    if why:
        pytest.skip(why)
    return backend


@pytest.fixture(scope="module", params=[*sandbox.ISOLATED_BACKENDS, "bwrap-oneshot"])
def backend(request: pytest.FixtureRequest) -> str:
    return available(request.param)


@contextmanager
def fresh_sandbox(backend: str, **overrides: Any) -> Iterator[sandbox.Sandbox]:
    """A sandbox of a `backend` fixture value, LIMITS with `overrides` (for attacks that would
    spoil a shared sandbox if they worked, or need other limits)."""
    name, _, mode = backend.partition("-")
    with sandbox.open(name, runtime_dir=runtime_dir(), **{**LIMITS, **overrides}) as box:
        if name == "bwrap":  # every command through the exec server, or none
            box.oneshot_commands = 10**9 if mode == "oneshot" else 0  # type: ignore[attr-defined]
        yield box


@pytest.fixture(scope="module")
def sb(backend: str) -> Iterator[sandbox.Sandbox]:
    """A sandbox shared by the tests of a module (each test cleans up what it leaves)."""
    with fresh_sandbox(backend) as box:
        yield box


@pytest.fixture(scope="module", params=sandbox.ISOLATED_BACKENDS)
def episode_backend(request: pytest.FixtureRequest) -> str:
    """An isolated backend for whole episodes (`run_episode`, validation open their own sandboxes)."""
    return available(request.param)


@pytest.fixture
def host_secret() -> Iterator[tuple[Path, str]]:
    """A secret planted in the host user's real home directory (removed afterwards)."""
    value = "SECRET-" + secrets.token_hex(8)
    path = Path.home() / f".clawloop-test-secret-{secrets.token_hex(4)}"
    path.write_text(value)
    yield path, value
    path.unlink(missing_ok=True)
