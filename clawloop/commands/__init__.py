"""Typer apps of the command line. Each commands module registers its commands on these.

Modules here must import heavy libraries (torch, transformers, trl, duckdb) inside the command
functions, never at module level: `clawloop --help` has to stay fast.
"""

import typer

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
