"""What killed sandboxes leave behind (`clawloop sandbox reap`): state dirs whose owning process
is gone, with their tmpfs mounts and cgroups. Dirs are told apart by their owning pid alone, so
a run in another pid namespace (a container sharing /tmp) looks dead: do not reap while another
run may be alive."""

from __future__ import annotations

import tempfile
from pathlib import Path

from sandbox._limits import reap_cgroups, unmount_tmpfs
from sandbox._paths import _STATE_RE, pid_alive, rmtree_force, tmp_root


def reap_state_dirs(tmp: Path | None = None) -> int:
    """Delete sandbox state dirs whose owning process is gone (killed, or exited via os._exit),
    with their tmpfs and cgroups."""
    n = 0
    for base in {Path(tmp or tempfile.gettempdir()), tmp_root()}:
        if not base.is_dir():
            continue
        for entry in base.iterdir():
            m = _STATE_RE.match(entry.name)
            if m and entry.is_dir() and not entry.is_symlink() and not pid_alive(int(m.group(2))):
                for quota in ("disk", "root"):  # bwrap's disk quota (root/: before 2026-12), if its
                    unmount_tmpfs(entry / quota)  # process died first
                rmtree_force(entry)
                n += 1
    reap_cgroups()
    return n
