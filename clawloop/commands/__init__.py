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


PARAMS_FILE = Path("params.yaml")
"""The params file a command reads when no `--params` is given and the working directory has one."""


def params_path(params: Path | None, no_params: bool = False) -> Path | None:
    """The params file of a command that trains or evaluates: `--params`, else ./params.yaml when
    there is one (unless `no_params`); None: the schema's defaults."""
    if params is not None:
        return params
    return None if no_params or not PARAMS_FILE.is_file() else PARAMS_FILE


def say_params(path: Path | None, no_params: bool = False) -> None:
    """The one line (stderr) that says which params a command runs on."""
    why = "--no-params" if no_params else f"no {PARAMS_FILE} here"
    typer.echo(f"[params] {path}" if path is not None else f"[params] schema defaults ({why})", err=True)


def command_params(params: Path | None, no_params: bool = False, **rollout: Any) -> Any:
    """The one Params (clawloop.config.params) of a command that evaluates: the file of `params_path`
    (validated: a bad one is one line naming it and the key) or the schema's defaults, with the
    `rollout` fields a command's flags give (--batch, --temperature; None keeps the file's). Stages
    build theirs from the same file (clawloop.artifacts.stage). The command says which file
    (`say_params`) once its input is checked, so bad input stays one line."""
    from clawloop.config.params import Params, load_params

    path = params_path(params, no_params)
    loaded = load_params(path) if path is not None else Params()
    changes = {k: v for k, v in rollout.items() if v is not None}
    return loaded.model_copy(update={"rollout": loaded.rollout.model_copy(update=changes)}) if changes else loaded


def renamed(value: Any, old_value: Any, flag: str, old_flag: str, required: bool = True) -> Any:
    """An option that was renamed (docs/names.md): its value under the new flag, else under the old one
    (a hidden alias, with a warning: scripts that call the old name keep running); neither, for a
    `required` one, is typer's usage error. The CLI's surface is snapshotted (tests/test_cli_surface.py),
    so a rename is deliberate."""
    if old_value is not None:
        typer.echo(f"warning: {old_flag} is now {flag}; the old name will go", err=True)
    if required and value is None and old_value is None:
        raise typer.BadParameter("this option is required", param_hint=f"'{flag}'")
    return value if value is not None else old_value
