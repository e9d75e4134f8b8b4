"""What every DVC stage script shares: params loading, one-line errors, atomic output dirs."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from clawloop.config.params import Params, load_params
from clawloop.errors import ClawloopError
from sandbox.base import SandboxError


def run_stage(main: Callable[[Params], None], params_path: str = "params.yaml") -> None:
    """Validate params.yaml, run `main(params)`; bad input exits 2 with one line, no traceback."""
    name = Path(sys.argv[0]).stem
    t0 = time.perf_counter()
    try:
        params = load_params(params_path)
        main(params)
    except (ClawloopError, SandboxError) as e:
        print(f"error: {name}: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"[{name}] done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


def stage_parser(*, iteration: bool = True, suites: bool = False) -> argparse.ArgumentParser:
    """A parser with the flags stages share: --out (the stage's output, required), for the stages
    of one loop iteration --iteration, and for those that read the held-out suites --suites. The
    stage adds its own inputs."""
    ap = argparse.ArgumentParser()
    if iteration:
        ap.add_argument("--iteration", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    if suites:
        ap.add_argument("--suites", type=Path, help="runs/suites.json: the held-out suites must still match it")
    return ap


class _OldName(argparse.Action):
    """A renamed flag's old name: stores into the new flag's dest and warns once on stderr."""

    def __init__(self, *args, new: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # noqa: ANN001
        print(f"warning: {option_string} is now {self.new}; the old name will go (docs/names.md)", file=sys.stderr)
        setattr(namespace, self.dest, values)


def renamed_flag(ap: argparse.ArgumentParser, new: str, old: str, *, required: bool = False, **kwargs) -> None:
    """Add flag `new` with `old` as a hidden alias that warns (docs/names.md has the renames):
    dvc.lock files and scripts that call the old name keep running."""
    group = ap.add_mutually_exclusive_group(required=required)
    dest = new.lstrip("-").replace("-", "_")
    group.add_argument(new, dest=dest, **kwargs)
    group.add_argument(old, dest=dest, action=_OldName, new=new, help=argparse.SUPPRESS,
                       **{k: v for k, v in kwargs.items() if k != "help"})


@contextlib.contextmanager
def output_dir(path: str | Path) -> Iterator[Path]:
    """Yield an empty temp dir that replaces `path` only when the block succeeds.

    A stage killed half-way leaves the previous output (or none), never a half-written one.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = path.with_name(f".{path.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        os.replace(path, old)
    os.replace(tmp, path)
    shutil.rmtree(old, ignore_errors=True)
