"""`clawloop tasks synth`: write a synthesized task pool and its manifest."""

from __future__ import annotations

from pathlib import Path

import typer

from clawloop.artifacts.diagnosis import load_diagnosis
from clawloop.commands import renamed, tasks_app
from clawloop.commands.out import check_out
from clawloop.config.synthesis import ROUTINES, CurriculumParams, Forms
from clawloop.core.io import write_json
from clawloop.core.tasks.pool import manifest_path, write_pool
from clawloop.errors import ClawloopError
from clawloop.phases.synthesize.grounded.attempts import Attempts
from clawloop.phases.synthesize.grounded.routines import synth_command
from clawloop.phases.synthesize.procedural.generate import manifest, synthesize
from clawloop.phases.synthesize.steering import plan


@tasks_app.command()
def synth(
    n: int = typer.Option(..., "--n", help="Number of tasks to synthesize (the budget)."),
    out: Path = typer.Option(..., "--out", help="Pool to write (JSONL); the manifest goes to <out>.manifest.json."),
    seed: int = typer.Option(0, "--seed", help="Seed: the same seed gives a byte-identical pool."),
    diagnosis: Path | None = typer.Option(None, "--diagnosis", help="diagnosis.json of the previous iteration."),
    old_report: Path | None = typer.Option(None, "--report", hidden=True, help="The old name of --diagnosis."),
    skills: str | None = typer.Option(None, "--skills", help="Comma-separated skill families (default: all)."),
    iteration: int = typer.Option(0, "--iteration", help="Iteration number recorded in provenance."),
    routine: str = typer.Option("procedural", "--routine", help="procedural | hindsight | proposer."),
    conditioning: bool = typer.Option(True, "--conditioning/--no-conditioning",
                                      help="Steer by the diagnosis (off: uniform plan, the ablation)."),
    conversational: float = typer.Option(0.5, "--conversational", min=0.0, max=1.0,
                                         help="Share rephrased as people write requests (backticked paths)."),
    answer: float = typer.Option(0.5, "--answer", min=0.0, max=1.0,
                                 help="Share asked to print the answer (graded on the last output) where a task allows."),
    twins: float = typer.Option(0.0, "--twins", min=0.0, max=1.0,
                                help="Share of the answer-form tasks also asked in the file form, in the next slot."),
    elsewhere: float = typer.Option(0.25, "--elsewhere", min=0.0, max=1.0,
                                    help="Share whose shell starts in / instead of beside the task's files."),
    # --- grounded routines hook (clawloop/phases/synthesize/grounded/routines.py) ---
    model: str | None = typer.Option(None, "--model", help="Loop model for hindsight|proposer: DIR, "
                                     "vllm:DIR or openai:MODEL@URL."),
    backend: str = typer.Option("bwrap", "--backend", help="Sandbox backend of hindsight exploration."),
    # --- end grounded routines hook ---
) -> None:
    """Synthesize N tasks with a curriculum steered by the previous iteration's diagnosis."""
    # every input is checked before anything is written
    diagnosis = renamed(diagnosis, old_report, "--diagnosis", "--report", required=False)
    if routine not in ROUTINES:
        raise ClawloopError(f"--routine: unknown routine {routine!r} (choose from {', '.join(ROUTINES)})")
    if n < 0:
        raise ClawloopError(f"--n: must be >= 0, got {n}")
    check_out(out)
    check_out(manifest_path(out), flag="--out's manifest")
    # --- grounded routines hook (clawloop/phases/synthesize/grounded/routines.py) ---
    if routine != "procedural":
        if not model:
            raise ClawloopError(f"--routine {routine}: needs --model (DIR, vllm:DIR or openai:MODEL@URL)")
        if diagnosis is not None and not diagnosis.is_file():
            raise ClawloopError(f"--diagnosis: {diagnosis}: no such file")
        attempts = Attempts(n=n, seed=seed, report=load_diagnosis(diagnosis) if conditioning and diagnosis else None,
                            iteration=iteration, backend=backend, progress=True)
        info = synth_command(routine, model, out, attempts, diagnosis, skills.split(",") if skills is not None else None)
        rej = ", ".join(f"{k} {v}" for k, v in info["stats"]["rejected"].items()) or "none"
        typer.echo(f"wrote {info['tasks']} tasks to {out} ({routine}: {info['stats']['attempts']} attempts; "
                   f"rejected: {rej})")
        return
    # --- end grounded routines hook ---
    rep = load_diagnosis(diagnosis) if diagnosis is not None else None
    params = CurriculumParams(conditioning=conditioning)
    the_plan = plan(rep, n, params, skills=skills.split(",") if skills is not None else None)
    forms = Forms(conversational=conversational, answer=answer, twins=twins, elsewhere=elsewhere)
    tasks = synthesize(the_plan, seed, iteration, progress=True, forms=forms)
    write_pool(out, tasks)
    info = manifest(the_plan, tasks, seed=seed, iteration=iteration,
                    report=str(diagnosis) if diagnosis else None, params=params.model_dump())
    write_json(manifest_path(out), info)
    div = info["diversity"]
    typer.echo(f"wrote {len(tasks)} tasks to {out} ({div['skills']} skills, "
               f"{div['unique_instructions']} unique instructions, mean level {div['mean_level']:.2f})")
