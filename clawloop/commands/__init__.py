"""Typer apps of the command line. Each commands module registers its commands on these.

Modules here must import heavy libraries (torch, transformers, trl, duckdb, pyarrow) inside the
command functions, never at module level, nor any project module that imports one at its top:
`clawloop --help` has to stay fast.
"""

from pathlib import Path
from typing import Any

import typer
import yaml

from clawloop.errors import ClawloopError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="clawloop: a teacher-free, self-improving training loop for shell agents.",
)
sandbox_app = typer.Typer(no_args_is_help=True, help="Run commands in isolated sandboxes.")
tasks_app = typer.Typer(no_args_is_help=True, help="Make, validate, probe and convert task pools.")
model_app = typer.Typer(no_args_is_help=True, help="Build and inspect policy models.")
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(tasks_app, name="tasks")
app.add_typer(model_app, name="model")

POLICY_SET_HELP = ("Override a backend option of the policy, e.g. --policy-set hf.engine.forward=fast --policy-set "
                   "hf.engine.speculate=8 (sections hf, llamacpp, vllm, openai: clawloop.policy.load.PolicySpec). Repeatable.")


def parse_sets(sets: list[str], flag: str = "--set") -> dict:
    """`sft.max_steps=10` style overrides into a nested dict (values parsed as YAML scalars)."""
    out: dict = {}
    for item in sets:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ClawloopError(f"{flag}: expected KEY=VALUE, got {item!r}")
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            value = raw
        node = out
        parts = key.strip().split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ClawloopError(f"{flag}: {key}: conflicts with another {flag}")
        node[parts[-1]] = value
    return out


def loop_rollout(params: Path | None, no_params: bool = False) -> dict[str, Any]:
    """The model agent's options from a params.yaml's `rollout` section (`--params`, else ./params.yaml
    when there is one, unless `no_params`): the loop's harness, reply tokens, seed, batch and
    temperature, and its backends' options (`policy`: rollout.engine, rollout.vllm, ...; the backend
    stays the one --model names). {} without one: the library's defaults."""
    if params is None and (no_params or not Path("params.yaml").is_file()):
        return {}
    from clawloop.config.params import load_params
    from clawloop.core.rollout_settings import rollout_settings

    path = params or Path("params.yaml")
    ctx = rollout_settings(load_params(path))
    typer.echo(f"harness, sampling and backend options: rollout section of {path}", err=True)
    return {"harness": ctx.harness, "max_new_tokens": ctx.sampling.max_new_tokens, "seed": ctx.sampling.seed,
            "batch": ctx.batch, "temperature": ctx.sampling.temperature, "policy": ctx.policy}


def renamed(value: Any, old_value: Any, flag: str, old_flag: str) -> Any:
    """A required option that was renamed: its value under the new flag, else under the old one (a
    hidden alias, with a warning: scripts that call the old name keep running); neither is typer's
    usage error. The CLI's surface is snapshotted (tests/test_cli_surface.py), so a rename is deliberate."""
    if old_value is not None:
        typer.echo(f"warning: {old_flag} is now {flag}; the old name will go", err=True)
    if value is None and old_value is None:
        raise typer.BadParameter("this option is required", param_hint=f"'{flag}'")
    return value if value is not None else old_value


def loop_spec(model: str, loop: dict[str, Any]) -> Any:
    """The PolicySpec of `--model` with the backends' options of the params (`loop_rollout`'s `policy`)."""
    from clawloop.policy.load import OPTION_SECTIONS, parse_spec

    spec = parse_spec(model)
    if loop.get("policy") is None:
        return spec
    return spec.model_copy(update={s: getattr(loop["policy"], s) for s in OPTION_SECTIONS})
