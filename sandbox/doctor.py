"""Which backends work on this host, and why not (`clawloop sandbox doctor`)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import sandbox
from sandbox.base import SandboxError
from sandbox.bwrap import find_bwrap, host_identity
from sandbox.docker import image_name, unavailable_reason


@dataclass(frozen=True)
class BackendStatus:
    name: str
    works: bool
    isolated: bool
    detail: str


def check_backend(name: str, runtime_dir: Path | None = None) -> BackendStatus:
    """Open a sandbox of backend `name` and run two commands in it."""
    notes: list[str] = []
    isolated = name in sandbox.ISOLATED_BACKENDS
    try:
        if name == "bwrap":
            binary = find_bwrap()
            version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
            ident = host_identity(binary)
            notes += [version or binary, ident.note]
        elif name == "docker":
            why = unavailable_reason()
            if why:
                return BackendStatus(name, False, isolated, why)
            notes.append(f"image {image_name()}")
        elif name == "local":
            notes.append("NOT isolated: for trusted tasks and debugging only")
        with sandbox.open(name, runtime_dir=runtime_dir) as sb:
            for _ in range(2):  # bwrap: the second command is the first through its exec server
                r = sb.exec("echo ok", timeout=30)
                if r.exit_code != 0 or r.output.strip() != "ok":
                    raise SandboxError(f"`echo ok` gave exit {r.exit_code}: {r.output.strip()[:200]}")
            if not getattr(sb, "process_limit_enforced", True) and isolated:
                notes.append("process limit NOT enforced")
            limits = getattr(sb, "limits", None)  # bwrap: which limits hold for the whole sandbox
            if limits is not None:
                notes += [f"memory: {limits.memory}", f"processes: {limits.processes}",
                          f"disk: {limits.disk}"]
    except SandboxError as e:
        return BackendStatus(name, False, isolated, str(e))
    except Exception as e:  # doctor reports, it does not crash
        return BackendStatus(name, False, isolated, f"{type(e).__name__}: {e}")
    return BackendStatus(name, True, isolated, "; ".join(notes))
