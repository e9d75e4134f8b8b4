"""Environment layers (sandbox/layers.py) merged into a BwrapSandbox: an apt layer's usr/ over /usr
and its etc/ entries into the sandbox's /etc, a pip layer over the task runtime, by overlay mounts."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from sandbox import _merge
from sandbox._host import HostIdentity
from sandbox._layout import RUNTIME_MOUNT, etc_template
from sandbox._owners import give_tree
from sandbox._paths import FileView, Mount
from sandbox.base import SandboxError
from sandbox.layers import Layer


class BwrapLayers:
    """The layer half of a BwrapSandbox."""

    # Set up by BwrapSandbox.__init__ and _setup.
    root: Path
    state_dir: Path
    _lock: threading.Lock
    _ident: HostIdentity
    _runtime: Path | None
    _etc: Path
    _view: FileView
    _overlays: dict[Path, list[Path]]
    _layer_keys: list[str]
    _check_open: Callable[[], None]

    def add_layers(self, layers: Sequence[Layer]) -> None:
        """Merge read-only layers (sandbox/layers.py) into the system the commands see: an apt
        layer's usr/ over /usr and its etc/ entries into the sandbox's /etc (and into the
        template trusted roots take /etc's loader and alternatives files from), a pip layer
        over the task runtime. Later layers lie above earlier ones; both the agent's root and
        every trusted root show them, read-only."""
        with self._lock:
            self._check_open()
            why = _merge.unshare_available()
            if why:
                raise SandboxError(why)
            owner = self._ident.run_as
            for layer in layers:
                if layer.key in self._layer_keys:
                    continue
                tree = layer.tree.resolve()
                if not tree.is_dir() or not _merge.overlay_path_ok(tree):
                    raise SandboxError(f"layer {layer.key}: {tree} is not a usable layer dir")
                if layer.kind == "apt":
                    if (tree / "usr").is_dir():
                        self._overlay("/usr", Path("/usr"), tree / "usr")
                    if (tree / "etc").is_dir():
                        self._layer_etc(tree / "etc", owner)
                elif layer.kind == "pip":
                    if self._runtime is None:
                        raise SandboxError(f"layer {layer.key}: a pip layer needs the task runtime")
                    self._overlay(RUNTIME_MOUNT, self._runtime, tree)
                else:
                    raise SandboxError(f"layer {layer.key}: unknown kind {layer.kind!r}")
                self._layer_keys.append(layer.key)

    def _overlay(self, target: str, base: Path, lower: Path) -> None:
        merged = self.state_dir / ("merged" + target.replace("/", "-"))
        if merged not in self._overlays:
            merged.mkdir()
            os.chmod(merged, 0o755)
            self._overlays[merged] = [base]
            self._view.add(Mount(target, merged, False, system=True))
        self._overlays[merged].insert(0, lower)

    def _layer_etc(self, etc: Path, owner: tuple[int, int] | None) -> None:
        """The layer's /etc files as an image would have them: in the agent's /etc (its own,
        writable copy) and in this sandbox's own copy of the /etc template."""
        if self._etc == etc_template():  # first layer with /etc: a template of this sandbox's own
            own = self.state_dir / "etc-template"
            shutil.copytree(self._etc, own, symlinks=True)
            self._etc = own
        for dest in (self.root / "etc", self._etc):
            shutil.copytree(etc, dest, symlinks=True, dirs_exist_ok=True)
            for dirpath, dirnames, filenames in os.walk(dest):
                for n in dirnames:
                    os.chmod(os.path.join(dirpath, n), 0o755)
                for n in filenames:  # writable by their owner, as dpkg leaves them
                    p = os.path.join(dirpath, n)
                    if not os.path.islink(p):
                        os.chmod(p, 0o644 | (os.stat(p).st_mode & 0o111))
        if owner:
            give_tree(self.root / "etc", owner)
