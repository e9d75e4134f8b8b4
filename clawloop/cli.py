"""The clawloop command line: `clawloop --help`.

Every command module registers on the apps of `clawloop.commands`; bad input raises
ClawloopError (or SandboxError), printed here as one line with a non-zero exit.
"""

from __future__ import annotations

import importlib
import sys

from clawloop import __version__
from clawloop.commands import app
from clawloop.errors import ClawloopError, printable
from sandbox.base import SandboxError

# Command modules, each owning one area; imported for their registrations.
_COMMAND_MODULES = [
    "sandbox_cmd",   # clawloop sandbox run|doctor|build-image
    "tasks_cmd",     # clawloop tasks schema|validate|import|export, clawloop eval
    "synth_cmd",     # clawloop tasks synth
    "model_cmd",     # clawloop model init
    "diagnose_cmd",  # clawloop diagnose, clawloop tasks probe
    "train_cmd",     # clawloop train
    "loop_cmd",      # clawloop check|report
    "serve_cmd",     # clawloop serve
]
for _name in _COMMAND_MODULES:
    importlib.import_module(f"clawloop.commands.{_name}")


def main() -> None:
    """Entry point: run the app, turning expected errors into one-line messages."""
    try:
        app()
    except (ClawloopError, SandboxError) as e:
        print(f"error: {printable(e)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


@app.command()
def version() -> None:
    """Print the version."""
    print(__version__)


if __name__ == "__main__":  # `python -m clawloop.cli` ran nothing and said nothing without this
    main()
