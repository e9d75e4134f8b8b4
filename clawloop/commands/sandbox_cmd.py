"""`clawloop sandbox run|doctor|build-image|reap|layers`: the sandbox package from the command line."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import typer

import sandbox
from clawloop.commands import sandbox_app
from clawloop.core.runtime import runtime_dir
from clawloop.errors import ClawloopError
from sandbox.docker import reap as reap_containers
from sandbox.doctor import check_backend
from sandbox.image import build_image as build_docker_image
from sandbox.layers import cache_root, list_layers
from sandbox.layers import prune as prune_layers
from sandbox.reap import reap_state_dirs


@sandbox_app.command(
    "run", context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
def run(
    command: list[str] = typer.Argument(..., help="The command; one argument is a shell string, "
                                        "several are quoted and joined. Put it after `--`."),
    backend: str = typer.Option("bwrap", "--backend", "-b", help="bwrap | docker | local"),
    workspace: Path | None = typer.Option(
        None, "--workspace", "-w", help="Host dir copied into the sandbox's /workspace first "
        "(changes are not copied back)."),
    timeout: float = typer.Option(60.0, "--timeout", "-t", help="Seconds; exit 124 when exceeded."),
    memory_mb: int = typer.Option(2048, "--memory-mb", help="Memory limit per command, MiB."),
) -> None:
    """Run a command in a fresh sandbox; print its output and exit with its exit code."""
    if backend not in sandbox.BACKENDS:
        raise ClawloopError(f"unknown backend {backend!r} (choose from {', '.join(sandbox.BACKENDS)})")
    if workspace is not None and not workspace.is_dir():
        raise ClawloopError(f"--workspace {workspace}: no such directory")
    if timeout <= 0:
        raise ClawloopError(f"--timeout {timeout}: must be positive")
    cmd = command[0] if len(command) == 1 else shlex.join(command)
    with sandbox.open(backend, seed_dir=workspace, runtime_dir=runtime_dir(),
                      memory_mb=memory_mb) as sb:
        result = sb.exec(cmd, timeout=timeout)
    sys.stdout.write(result.output)
    sys.stdout.flush()
    if result.timed_out:
        print(f"[timed out after {timeout:g} s]", file=sys.stderr)
    raise typer.Exit(result.exit_code)


@sandbox_app.command("doctor")
def doctor() -> None:
    """Check each backend here: does it work, and if not, why. Exit 1 if no isolated one works."""
    rt = runtime_dir()
    print(f"task runtime: {rt or 'none (run scripts/setup.sh)'}")
    ok = False
    for name in sandbox.BACKENDS:
        st = check_backend(name, rt)
        ok |= st.works and st.isolated
        print(f"{name:<7} {'works' if st.works else 'FAILS':<6} {st.detail}")
    raise typer.Exit(0 if ok else 1)


@sandbox_app.command("build-image")
def build_image(
    tag: str = typer.Option("clawloop-sandbox:latest", help="Image name."),
    method: str = typer.Option("auto", help="auto | dockerfile | debootstrap"),
) -> None:
    """Build the docker backend's image: sandbox/Dockerfile with a registry, else debootstrap."""
    how = build_docker_image(tag, runtime_dir=runtime_dir(), method=method,
                log=lambda m: print(f"[build-image] {m}", file=sys.stderr))
    print(f"built {tag} ({how})")


@sandbox_app.command("reap")
def reap(all_: bool = typer.Option(False, "--all", help="Remove every clawloop container.")) -> None:
    """Remove state dirs and containers left behind by crashed runs."""
    print(f"removed {reap_state_dirs()} state dir(s)")
    why = sandbox.unavailable_reason("docker")
    if why is None or "not found" in why:  # no image does not mean no containers
        print(f"removed {reap_containers(everything=all_)} container(s)")
    else:
        print(f"docker: {why}")


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


@sandbox_app.command("layers")
def layers(
    prune: bool = typer.Option(False, "--prune", help="Remove layers (all, or those named / unused for "
                               "--older-than) and unfinished builds."),
    keys: list[str] = typer.Argument(None, help="Layer keys to prune (with --prune); none: every layer."),
    older_than_days: float | None = typer.Option(None, "--older-than", help="With --prune: only layers "
                                                 "unused for this many days."),
    cache: Path | None = typer.Option(None, "--cache", help="The cache dir (default $CLAWLOOP_LAYER_CACHE, "
                                      "else ~/.cache/clawloop/layers)."),
) -> None:
    """Show the environment-layer cache (one line per layer: key, kind, size, packages) and the
    disk it takes; --prune removes layers (a sandbox that has one mounted keeps it until it closes)."""
    root = cache or cache_root()
    if prune:
        if keys and older_than_days is not None:
            raise ClawloopError("--prune: name layer keys or give --older-than, not both")
        n, freed = prune_layers(root, keys=list(keys) if keys else None,
                            older_than_s=older_than_days * 86400 if older_than_days is not None else None)
        print(f"removed {n} layer(s), {_size(freed)} freed")
    found = list_layers(root)
    for c in found:
        pkgs = " ".join(c.packages)
        state = "" if c.complete else " (unfinished build)"
        print(f"{c.key:<29} {c.kind:<4} {_size(c.size_bytes):>10}  {pkgs[:100]}{state}")
    total = sum(c.size_bytes for c in found)
    print(f"{len(found)} layer(s), {_size(total)} in {root}")
