"""Pieces of the sandbox package that need no sandbox: output capture, path resolution."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import SandboxError
from sandbox._paths import FileView, Mount, rmtree_force, sandbox_path
from sandbox._proc import HeadTail, run_captured


def test_head_tail_keeps_both_ends_in_bounded_memory() -> None:
    buf = HeadTail(100)
    for i in range(10_000):
        buf.add(f"line {i}\n".encode())
    assert len(buf.head) + len(buf.tail) <= 3 * buf.keep
    text, truncated = buf.result()
    assert truncated and text.startswith("line 0\n") and text.endswith("line 9999\n")
    assert "bytes cut" in text and len(text) < 200


def test_head_tail_short_output_is_exact() -> None:
    buf = HeadTail(1000)
    buf.add("héllo\n".encode())
    assert buf.result() == ("héllo\n", False)


def test_run_captured_timeout_and_signals(tmp_path: Path) -> None:
    r = run_captured(["sleep", "10"], timeout=0.3, output_limit=100, env={})
    assert (r.exit_code, r.timed_out) == (124, True) and r.duration_s < 3
    r = run_captured(["sh", "-c", "echo a; kill -TERM $$"], timeout=5, output_limit=100, env={})
    assert (r.exit_code, r.output) == (143, "a\n")


@pytest.fixture
def view(tmp_path: Path) -> FileView:
    root = tmp_path / "root"
    (root / "workspace").mkdir(parents=True)
    (root / "srv").mkdir()
    (root / "srv" / "f").write_text("srv file")
    v = FileView(root)
    v.add(Mount("/usr", Path("/usr"), False, system=True))
    v.add(Mount("/proc", None, False, system=True))
    return v


def test_paths_must_be_absolute() -> None:
    assert sandbox_path("//a/./b/../c") == "/a/c"
    for bad in ("relative", "", "/a\0b"):
        with pytest.raises(SandboxError):
            sandbox_path(bad)


def test_symlinks_resolve_chroot_style(view: FileView, tmp_path: Path) -> None:
    ws = view.root / "workspace"
    os.symlink("/srv/f", ws / "abs")
    os.symlink("../../../../../../srv/f", ws / "rel")
    os.symlink(str(tmp_path / "outside"), ws / "host")
    (tmp_path / "outside").write_text("host secret")
    assert view.read("/workspace/abs") == b"srv file"
    assert view.read("/workspace/rel") == b"srv file"
    with pytest.raises(FileNotFoundError):
        view.read("/workspace/host")  # the host path does not exist inside the sandbox
    os.symlink("/usr/bin/env", ws / "sys")
    with pytest.raises(SandboxError):
        view.read("/workspace/sys")
    os.symlink("/proc/self/environ", ws / "proc")
    with pytest.raises(SandboxError):
        view.read("/workspace/proc")
    os.symlink("loop", ws / "loop")
    with pytest.raises(SandboxError, match="symbolic links"):
        view.read("/workspace/loop")


def test_write_through_symlink_stays_inside(view: FileView, tmp_path: Path) -> None:
    os.symlink(str(tmp_path / "target"), view.root / "workspace" / "out")
    view.write("/workspace/out", "data")
    assert not (tmp_path / "target").exists()
    assert (view.root / str(tmp_path / "target").lstrip("/")).read_text() == "data"
    with pytest.raises(SandboxError, match="read-only"):
        view.write("/usr/lib/x", "data")


def test_fifo_is_not_read(view: FileView) -> None:
    os.mkfifo(view.root / "workspace" / "fifo")
    with pytest.raises(SandboxError, match="regular"):
        view.read("/workspace/fifo")
    with pytest.raises(SandboxError, match="regular"):
        view.write("/workspace/fifo", "x")


def test_rmtree_force_handles_locked_dirs(tmp_path: Path) -> None:
    d = tmp_path / "t"
    (d / "a" / "b").mkdir(parents=True)
    (d / "a" / "b" / "f").write_text("x")
    os.chmod(d / "a" / "b", 0)
    os.chmod(d / "a", 0o500)
    rmtree_force(d)
    assert not d.exists()
