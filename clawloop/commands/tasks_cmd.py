"""`clawloop tasks schema|import|export|validate|probe` (`tasks synth`: synth_cmd.py)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from clawloop.artifacts.probe import summarize, write_probe
from clawloop.commands import (
    command_params,
    params_path,
    renamed,
    say_params,
    tasks_app,
)
from clawloop.commands.out import FORCE_HELP, check_out, staged_dir
from clawloop.core.executor import executor_params
from clawloop.core.io import write_json
from clawloop.core.progress import Progress
from clawloop.core.tasks.claw_eval_live import without_grader_root
from clawloop.core.tasks.formats import FORMATS, load_suite_any
from clawloop.core.tasks.harbor_export import ADAPTER_GRADED, export_tasks
from clawloop.core.tasks.layers import layer_specs
from clawloop.core.tasks.pool import read_pool, read_pool_lenient, write_pool
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError, printable
from clawloop.phases.validate.agent_free import (
    AgentFreeParams,
    default_heldout,
    default_heldout_instances,
    load_heldout,
    validate_pool,
)
from clawloop.phases.validate.probe import probe_tasks
from clawloop.policy.load import load_policy

BACKEND_HELP = "Sandbox backend: bwrap (isolated, default), docker, or local (NOT isolated)."

EXECUTOR_HELP = ("Where the sandbox episodes run: local (--jobs threads) or ray (one Ray task per episode, one "
                 "CPU each: joins $RAY_ADDRESS or a `ray start` cluster on this machine, else starts a local one "
                 "with --jobs CPUs).")

FORMAT_HELP = f"Suite format: {' | '.join(FORMATS)} (auto: told by the files; clawloop.core.tasks.formats)."

SKIP_BAD_LINES_HELP = "Go on when lines of a JSONL input are malformed (listed, then left out); default: exit 2."


@tasks_app.command()
def schema() -> None:
    """Print the JSON Schema of one pool line (a Task)."""
    s = Task.model_json_schema(mode="validation")
    s.setdefault("properties", {})["id"] = {
        "type": "string", "readOnly": True,
        "description": "sha256 of the content fields (16 hex digits); checked when present."}
    typer.echo(json.dumps(s, indent=2, sort_keys=True))


@tasks_app.command("import")
def import_(
    src: Path = typer.Argument(..., help="A Harbor (or Terminal-Bench 1) task directory, or a directory of them; "
                               "with --format, a suite of that format."),
    out: Path = typer.Option(..., "--out", help="Pool JSONL to write (with --harbor: a new or empty directory)."),
    source: str | None = typer.Option(None, "--source", help="Suite name recorded in each task (default: the directory's)."),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="Write the tasks that load even if others do not."),
    fmt: str = typer.Option("auto", "--format", help=FORMAT_HELP),
    harbor: bool = typer.Option(False, "--harbor", help="Write one Harbor task directory per task under --out "
                                "instead of a JSONL pool."),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP + " With --harbor."),
    grader_root: Path | None = typer.Option(None, "--grader-root", help="claw-eval-live: the benchmark's checkout, "
                                            "where sandbox_files not beside a task.yaml are looked up (else "
                                            "$CLAWLOOP_GRADER_ROOT; never a directory above the task)."),
) -> None:
    """Import task directories (Harbor, or another --format) into a JSONL pool or Harbor directories."""
    check_out(out, "dir" if harbor else "file", run=harbor, force=force)
    if not src.is_dir():
        raise ClawloopError(f"{src}: not a directory")
    suite = load_suite_any(src, fmt, name=source, grader_root=grader_root)
    for item in suite.items:  # a pool names no grader root: where it is graded, the user names one
        if item.task is not None:
            item.task = without_grader_root(item.task)
    bad = [i for i in suite.items if i.task is None]
    for i in bad:
        typer.echo(f"error: {printable(i.error)}", err=True)
    if bad and not skip_bad:
        raise ClawloopError(f"{len(bad)} of {len(suite.items)} tasks failed to load; nothing written (--skip-bad)")
    skipped = sum(1 for t in suite.tasks if t.needs_image)
    layered = sum(1 for t in suite.tasks if not t.needs_image and layer_specs(t))
    notes = [f"{skipped} need their Docker image"] * bool(skipped) + \
        [f"{layered} need environment layers, built on first run"] * bool(layered)
    note = f" ({'; '.join(notes)})" if notes else ""
    if harbor:
        n, left = _export(suite.tasks, out)
        typer.echo(f"wrote {n} task directories under {out}{note}{left}")
        return
    n = write_pool(out, suite.tasks)
    typer.echo(f"wrote {n} tasks to {out}{note}")


@tasks_app.command()
def export(
    pool: Path = typer.Argument(..., help="Pool JSONL."),
    out: Path = typer.Option(..., "--out", help="A new or empty directory to write one Harbor task directory per "
                             "task into; it appears whole, or not at all."),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Export a JSONL pool as Harbor task directories. Tasks only clawloop's adapter can grade
    (answer-form, InterCode, Claw-Eval-Live) have no Harbor form: they are left out and counted."""
    check_out(out, "dir", run=True, force=force)
    n, left = _export(read_pool(pool), out)
    typer.echo(f"wrote {n} task directories under {out}{left}")


def _export(tasks: list[Task], out: Path) -> tuple[int, str]:
    """Write the tasks that have a Harbor form into `out`, all or nothing (`staged_dir`): the
    number written and a note on those left out. None to write is an error."""
    def adapter(t: Task) -> str | None:
        return next((k for k in ADAPTER_GRADED if k in t.metadata), None)

    left: dict[str, int] = {}
    for t in tasks:
        if (kind := adapter(t)) is not None:
            left[kind] = left.get(kind, 0) + 1
    why = ", ".join(f"{kind} {n}" for kind, n in left.items())
    note = (f"; left out {sum(left.values())} tasks that only clawloop's adapters can grade ({why}): a Harbor "
            "directory cannot carry that, write a pool (.jsonl) for them") if left else ""
    keep = [t for t in tasks if adapter(t) is None]
    if not keep:
        raise ClawloopError(f"--out {out}: no task to write{note or ': the pool is empty'}; nothing written")
    with staged_dir(out) as tmp:
        export_tasks(keep, tmp)
    return len(keep), note


@tasks_app.command()
def validate(
    pool: Path = typer.Argument(..., help="Pool JSONL to validate."),
    out: Path = typer.Option(..., "--out", help="JSONL of the tasks kept."),
    rejections: Path | None = typer.Option(None, "--rejections", help="JSON: counts kept and rejected per reason, "
                                           "with example ids. Required."),
    old_report: Path | None = typer.Option(None, "--report", hidden=True, help="The old name of --rejections."),
    backend: str = typer.Option("bwrap", "--backend", help=BACKEND_HELP),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Sandboxes in parallel."),
    executor: str = typer.Option("local", "--executor", help=EXECUTOR_HELP),
    heldout: list[Path] | None = typer.Option(
        None, "--heldout", help="Held-out suite (repeatable; default: every Harbor task under benchmarks/, synth-heldout by the same task only)."),
    no_heldout: bool = typer.Option(False, "--no-heldout", help="Skip the held-out overlap check."),
    near_duplicate_threshold: float = typer.Option(0.9, "--near-duplicate-threshold", min=0.0, max=1.0),
    heldout_threshold: float = typer.Option(0.3, "--heldout-threshold", min=0.0, max=1.0,
                                            help="Share of a task's instruction 8-grams seen held-out that rejects it."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as one JSON object, the only thing "
                                  "on stdout (the summary line goes to stderr)."),
    skip_bad_lines: bool = typer.Option(False, "--skip-bad-lines", help=SKIP_BAD_LINES_HELP
                                        + " Left-out lines count as rejected (parse)."),
) -> None:
    """Agent-free validation: oracle passes, no-op fails, deterministic, no duplicates, no held-out overlap."""
    rejections = renamed(rejections, old_report, "--rejections", "--report")
    check_out(out)
    check_out(rejections, flag="--rejections")
    tasks, parse_errors = read_pool_lenient(pool)
    _refuse_bad_lines(pool, parse_errors, len(tasks), skip_bad_lines)
    held = [] if no_heldout else load_heldout(heldout if heldout else default_heldout())
    # benchmarks/synth-heldout shares templates with every pool: kept off by the same task only
    instances = [] if no_heldout or heldout else load_heldout(default_heldout_instances())
    params = AgentFreeParams(near_duplicate_threshold=near_duplicate_threshold,
                             heldout_threshold=heldout_threshold)
    with Progress("validate", total=len(tasks), unit="tasks") as bar:
        kept, rep = validate_pool(tasks, backend, jobs, held, params, parse_errors=parse_errors,
                                  on_done=bar.advance, executor=executor_params(executor),
                                  heldout_instances=instances)
    rep["heldout_tasks"] = len(held) + len(instances)
    write_pool(out, kept)
    write_json(rejections, rep)
    rejected = ", ".join(f"{k} {v}" for k, v in rep["rejected"].items()) or "none"
    typer.echo(f"kept {rep['kept']} of {rep['input']} tasks ({rep['tasks_per_s']} tasks/s); rejected: {rejected}",
               err=json_out)
    if json_out:
        typer.echo(json.dumps(rep, sort_keys=True))


def _refuse_bad_lines(path: Path, errors: list[str], good: int, skip: bool) -> None:
    """Print every malformed line; unless `skip`, stop (exit 2): an unreadable input is bad input,
    unlike tasks that parse and are then rejected."""
    for err in errors:
        typer.echo(f"error: {printable(err)}", err=True)
    if errors and not skip:
        raise ClawloopError(f"{path}: {len(errors)} of {len(errors) + good} lines malformed; "
                            "nothing written (--skip-bad-lines goes on without them)")


@tasks_app.command()
def probe(
    pool: Path = typer.Argument(..., help="Pool JSONL to probe."),
    model: str = typer.Option(..., "--model", help="The current policy: DIR, vllm:DIR or openai:MODEL@URL."),
    out: Path = typer.Option(..., "--out", help="Probe table (JSONL of task_id, k, passes, errors, label)."),
    k: int | None = typer.Option(None, "--k", min=1, help="Rollouts per task (default: validation.probe.k of the params)."),
    backend: str | None = typer.Option(None, "--backend", help="Sandbox backend: bwrap, docker or local "
                                       "(default: sandbox.backend of the params)."),
    batch: int | None = typer.Option(None, "--batch", min=1, help="Episodes stepped in lockstep (default: "
                                     "rollout.batch of the params)."),
    trajectories: Path | None = typer.Option(
        None, "--trajectories", help="Write the probe rollouts here (an empty directory; default: not kept)."),
    temperature: float | None = typer.Option(None, "--temperature", min=0.0, help="Sampling temperature "
                                             "(default: validation.probe.temperature of the params)."),
    iteration: int = typer.Option(-1, "--iteration", help="Loop iteration written into the trajectories."),
    params: Path | None = typer.Option(None, "--params", help="The params.yaml whose `rollout` and `validation.probe` "
                                       "sections set the probe, as the validate stage's (default: ./params.yaml "
                                       "when there is one, else the schema's defaults)."),
    no_params: bool = typer.Option(False, "--no-params", help="The schema's defaults, not ./params.yaml."),
) -> None:
    """Label each task too_easy (k/k), learnable (0<p<k) or frontier (0/k) with the current policy, as
    the validate stage's probe does (one Params: clawloop.core.rollout_settings)."""
    check_out(out)
    if trajectories is not None:
        check_out(trajectories, "dir", run=True, flag="--trajectories")
    tasks = read_pool(pool)
    from clawloop.core.rollout_settings import rollout_settings

    loop = command_params(params, no_params, batch=batch)
    ctx, probe_params = rollout_settings(loop), loop.validation.probe
    k = k or probe_params.k
    spec = ctx.policy_spec(model)
    say_params(params_path(params, no_params), no_params)
    policy = load_policy(spec)
    probing = ctx.rollout_config(k=k, harness=ctx.harness_of(spec),
                                 sampling=ctx.sampling_at(probe_params.temperature if temperature is None else temperature),
                                 iteration=iteration, suite="probe", backend=backend or ctx.backend)
    results = probe_tasks(tasks, policy, probing, out_dir=trajectories, progress=True)
    write_probe(out, results)
    counts = summarize(results)
    typer.echo(f"probed {len(results)} tasks with k={k}: "
               + ", ".join(f"{label} {n}" for label, n in counts.items()) + f"; wrote {out}")
