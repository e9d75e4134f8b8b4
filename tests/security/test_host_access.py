"""The host's own reads and writes of sandbox files, raced by a process inside.

`read_file`/`write_file` resolve a path chroot-style, then open it on the host. A process alive
meanwhile (a survivor, or a command running while another thread reads) can swap a directory
of that path with a symlink to a host directory (`renameat2(RENAME_EXCHANGE)`, atomic): a host
that opens the resolved path by name then reads or writes the host's files.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from pathlib import Path

import pytest

from sandbox import SandboxError

from .conftest import fresh_sandbox

RACER = r"""
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
os.chdir("/workspace/race")
open(".started", "w").close()
end, n = time.monotonic() + {seconds}, 0
while time.monotonic() < end:  # d <-> l and w <-> v, each pair: a real dir and a symlink to the host
    libc.renameat2(-100, b"d", -100, b"l", 2)
    libc.renameat2(-100, b"w", -100, b"v", 2)
    n += 1
print("SWAPS", n)
"""


def test_host_access_never_follows_a_swapped_component(backend: str,
                                                      host_secret: tuple[Path, str]) -> None:
    secret, value = host_secret
    out_dir = Path(tempfile.mkdtemp(prefix="clawloop-race-"))
    os.chmod(out_dir, 0o777)
    try:
        with fresh_sandbox(backend, cpu_seconds=30) as sb:
            view = getattr(sb, "_view", None)
            if view is None:
                pytest.skip("no host-side file view")
            sb.exec(f"mkdir -p /workspace/race/d /workspace/race/w && cd /workspace/race && "
                    f"echo inside > d/{secret.name} && ln -s {secret.parent} l && ln -s {out_dir} v")
            sb.write_file("/workspace/racer.py", RACER.replace("{seconds}", "3"))
            result: list[object] = []
            t = threading.Thread(target=lambda: result.append(sb.exec("python3 /workspace/racer.py",
                                                                      timeout=30)))
            t.start()
            try:
                deadline = time.monotonic() + 10
                while not _exists(view, "/workspace/race/.started") and time.monotonic() < deadline:
                    time.sleep(0.01)
                reads = writes = 0
                end = time.monotonic() + 2.5
                while time.monotonic() < end:
                    # The sandbox's lock would serialise these with the command: the view is what
                    # read_file/write_file use once they hold it.
                    with contextlib.suppress(SandboxError, OSError):
                        data = view.read(f"/workspace/race/d/{secret.name}")
                        reads += 1
                        assert value.encode() not in data
                    with contextlib.suppress(SandboxError, OSError):
                        view.write(f"/workspace/race/w/out-{writes}", "pwned")
                        writes += 1
            finally:
                t.join()
            assert result and "SWAPS" in result[0].output, result  # type: ignore[attr-defined]
            assert reads and writes, (reads, writes)  # the view kept working in between
        assert list(out_dir.iterdir()) == []
    finally:
        for p in out_dir.iterdir():
            p.unlink()
        out_dir.rmdir()


def _exists(view: object, path: str) -> bool:
    try:
        view.read(path)  # type: ignore[attr-defined]
        return True
    except (SandboxError, OSError):
        return False
