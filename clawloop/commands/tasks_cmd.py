"""`clawloop tasks schema|import|export|validate` and `clawloop eval`."""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer

from clawloop.commands import (
    POLICY_SET_HELP,
    app,
    command_params,
    params_path,
    parse_sets,
    renamed,
    say_params,
    tasks_app,
)
from clawloop.commands.out import FORCE_HELP, check_out, staged_dir
from clawloop.core.executor import executor_params
from clawloop.core.io import write_json, write_jsonl
from clawloop.core.progress import Progress, console
from clawloop.core.tasks.claw_eval_live import without_grader_root
from clawloop.core.tasks.formats import FORMATS, load_suite_any
from clawloop.core.tasks.harbor_export import ADAPTER_GRADED, export_tasks
from clawloop.core.tasks.layers import layer_specs
from clawloop.core.tasks.pool import read_pool, read_pool_lenient, write_pool
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError, printable
from clawloop.phases.evaluate.agent_eval import EvalConfig, evaluate
from clawloop.phases.validate.agent_free import (
    AgentFreeParams,
    default_heldout,
    default_heldout_instances,
    load_heldout,
    validate_pool,
)
from clawloop.policy.load import with_options

_BACKEND_HELP = "Sandbox backend: bwrap (isolated, default), docker, or local (NOT isolated)."


_EXECUTOR_HELP = ("Where the sandbox episodes run: local (--jobs threads) or ray (one Ray task per episode, one "
                  "CPU each: joins $RAY_ADDRESS or a `ray start` cluster on this machine, else starts a local one "
                  "with --jobs CPUs).")

EPISODES_JSONL = "episodes.jsonl"
"""The episode records in `clawloop eval --out DIR` (one EpisodeRecord.to_json a line)."""

_EVAL_OUT_HELP = (f"A directory for this run: {EPISODES_JSONL} (one JSON line per episode) for every agent, and "
                  "the Parquet trajectories for --agent model. A directory for every agent, so that `clawloop "
                  "view DIR` and `clawloop diagnose DIR` read any run; it must be new or empty (--force replaces "
                  "an earlier run), and it appears whole when the run ends.")


FORMAT_HELP = f"Suite format: {' | '.join(FORMATS)} (auto: told by the files; clawloop.core.tasks.formats)."

_SKIP_BAD_LINES_HELP = "Go on when lines of a JSONL input are malformed (listed, then left out); default: exit 2."


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
    backend: str = typer.Option("bwrap", "--backend", help=_BACKEND_HELP),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Sandboxes in parallel."),
    executor: str = typer.Option("local", "--executor", help=_EXECUTOR_HELP),
    heldout: list[Path] | None = typer.Option(
        None, "--heldout", help="Held-out suite (repeatable; default: every Harbor task under benchmarks/, synth-heldout by the same task only)."),
    no_heldout: bool = typer.Option(False, "--no-heldout", help="Skip the held-out overlap check."),
    near_duplicate_threshold: float = typer.Option(0.9, "--near-duplicate-threshold", min=0.0, max=1.0),
    heldout_threshold: float = typer.Option(0.3, "--heldout-threshold", min=0.0, max=1.0,
                                            help="Share of a task's instruction 8-grams seen held-out that rejects it."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as one JSON object, the only thing "
                                  "on stdout (the summary line goes to stderr)."),
    skip_bad_lines: bool = typer.Option(False, "--skip-bad-lines", help=_SKIP_BAD_LINES_HELP
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


@app.command("eval")
def eval_(
    suites: list[Path] = typer.Argument(..., help="Suites: a directory of Harbor tasks, one task directory, or a JSONL pool."),
    agent: str = typer.Option("oracle", "--agent", help="oracle | noop | model"),
    model: str | None = typer.Option(None, "--model", help="Policy for --agent model (DIR, vllm:DIR, openai:MODEL@URL)."),
    backend: str = typer.Option("bwrap", "--backend", help=_BACKEND_HELP),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Episodes in parallel."),
    executor: str = typer.Option("local", "--executor", help=_EXECUTOR_HELP + " Oracle and no-op agents only."),
    out: Path | None = typer.Option(None, "--out", help=_EVAL_OUT_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as one JSON object, the only thing "
                                  "on stdout (the table goes to stderr)."),
    fail_under: float | None = typer.Option(None, "--fail-under", min=0.0, max=1.0, help="Exit 1 when the pass "
                                            "rate is below RATE (0 to 1) or nothing was graded: a gate for CI."),
    samples: int | None = typer.Option(None, "--samples", "-k", min=1, help="--agent model: episodes per task "
                                       "(default: eval.samples of the params)."),
    batch: int | None = typer.Option(None, "--batch", min=1, help="--agent model: episodes stepped in lockstep "
                                     "(default: rollout.batch of the params)."),
    temperature: float | None = typer.Option(None, "--temperature", min=0.0, help="--agent model: sampling "
                                             "temperature (default: rollout.temperature of the params)."),
    params: Path | None = typer.Option(None, "--params", help="--agent model: the params.yaml whose `rollout` "
                                       "section sets the harness, sampling, batch and backend options, as the "
                                       "evaluate stage's (default: ./params.yaml when there is one, else the "
                                       "schema's defaults); --batch and --temperature override it."),
    no_params: bool = typer.Option(False, "--no-params", help="--agent model: the schema's defaults, not "
                                   "./params.yaml."),
    playbook: Path | None = typer.Option(None, "--playbook", help="--agent model: a playbook.json rendered into "
                                         "the system prompt (default: the one a model DIR carries, if any)."),
    # --- formats hook (issue #10): benchmark layouts (clawloop.core.tasks.formats)
    fmt: str = typer.Option("auto", "--format", help=FORMAT_HELP),
    grader_root: Path | None = typer.Option(None, "--grader-root", help="claw-eval-live: a checkout of the "
                                            "benchmark whose package grades its tasks (else $CLAWLOOP_GRADER_ROOT)."),
    skills: str | None = typer.Option(None, "--skills", help="Harbor/SkillsBench: on | off (with or without "
                                      "environment/skills; default: as the Dockerfile says)."),
    # --- end formats hook
    skip_bad_lines: bool = typer.Option(False, "--skip-bad-lines", help=_SKIP_BAD_LINES_HELP
                                        + " Left-out lines are listed as unloadable tasks."),
    policy_sets: list[str] = typer.Option([], "--policy-set", help=POLICY_SET_HELP),
) -> None:
    """Run an agent on task suites and report pass rates per suite and skill (errors are not failures).

    Shows progress as episodes end (a bar on a terminal, else a line every few seconds); the summary (--json) carries wall_s, episodes_per_s and, for --agent model, token counts and tokens_per_s.

    Exit status: 0 when the suites ran; 1 when the pass rate is under --fail-under (or nothing was graded); 2 on bad input, including suites where no task loaded."""
    if policy_sets and not model:  # checked before any episode starts
        raise ClawloopError("--policy-set needs --agent model --model")
    if out is not None:
        if out.suffix in (".json", ".jsonl") and not out.is_dir():
            raise ClawloopError(f"--out {out}: names a directory (it gets {EPISODES_JSONL}); drop the suffix")
        check_out(out, "dir", run=True, force=force)
    agent_model = None
    if agent == "model":  # one Params, as a stage's rollouts (clawloop.core.rollout_settings)
        if not model:
            raise ClawloopError("--agent model needs --model (DIR, vllm:DIR or openai:MODEL@URL)")
        from clawloop.core.rollout_settings import rollout_settings

        loop = command_params(params, no_params, batch=batch, temperature=temperature)
        ctx = rollout_settings(loop)
        spec = ctx.policy_spec(model)
        if policy_sets:
            spec = with_options(spec, parse_sets(policy_sets, "--policy-set"))
        agent_model = ctx.model_agent(spec, samples=samples or loop.eval.samples, playbook=playbook)
        say_params(params_path(params, no_params), no_params)
    config = EvalConfig(backend=backend, jobs=jobs, fmt=fmt, executor=executor_params(executor),
                        format_options={"grader_root": grader_root, "skills": skills},  # formats hook (issue #10)
                        skip_bad_lines=skip_bad_lines)
    with staged_dir(out) if out is not None else nullcontext(None) as run_dir:
        if agent_model is not None:
            agent_model = replace(agent_model, out_dir=run_dir)
        records, summary = evaluate(suites, agent, config, model=agent_model, progress=True)
        if run_dir is not None:
            write_jsonl(run_dir / EPISODES_JSONL, (r.to_json() for r in records))
    _print_summary(summary, stderr=json_out)
    if json_out:
        typer.echo(json.dumps(summary, sort_keys=True))
    _gate(summary, fail_under)


def _gate(summary: dict[str, Any], fail_under: float | None) -> None:
    """The exit status of a finished evaluation: 2 (bad input, one line) when no task loaded, 1
    when the pass rate is under `fail_under` or nothing was graded, else 0."""
    if summary["tasks"] == summary["unloadable"]:
        raise ClawloopError("no task to run: " + (f"all {summary['tasks']} tasks are unloadable (listed above)"
                                                  if summary["tasks"] else "the suites hold no task"))
    rate = summary["pass_rate"]
    if fail_under is not None and (rate is None or rate < fail_under):
        typer.echo(f"fail: pass rate {_rate(rate)} is below --fail-under {fail_under:g}", err=True)
        raise typer.Exit(1)


def _rate(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _print_summary(summary: dict[str, Any], stderr: bool = False) -> None:
    """The table per skill (unloadable tasks on their own row), then one whole line per error,
    unloadable task and skip, then timings and fractional scores; on stderr when stdout is JSON's."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{summary['agent']} on {summary['backend']}")
    for col in ("skill", "tasks", "passed", "failed", "errors", "skipped", "pass rate"):
        table.add_column(col, justify="left" if col == "skill" else "right")
    cols = ("tasks", "passed", "failed", "errors", "skipped")
    rows = list(summary["skills"].items())
    if summary.get("unloadable"):
        n = summary["unloadable"]
        rows.append(("(unloadable)", {"tasks": n, "passed": 0, "failed": 0, "errors": n, "skipped": 0,
                                      "pass_rate": None}))
    for i, (name, c) in enumerate(rows):
        table.add_row(escape(printable(name)), *(str(c[k]) for k in cols), _rate(c["pass_rate"]), end_section=i == len(rows) - 1)
    table.add_row("total", *(str(summary[k]) for k in cols), _rate(summary["pass_rate"]))
    out = console(stderr=stderr)
    out.print(table)
    for kind, label, color in (("errors_detail", "error", "red"), ("unloadable_detail", "unloadable", "red"),
                               ("skipped_detail", "skipped", "yellow")):
        for e in summary.get(kind, [])[:10]:
            out.print(f"[{color}]{label}[/{color}] {escape(printable(e['suite']))}/"
                      f"{escape(printable(e['task']))}: {escape(printable(e['reason']))}", highlight=False)
    if summary.get("wall_s") is not None:
        tok = (f", {summary['completion_tokens']:,} tokens generated ({summary['tokens_per_s']} tokens/s)"
               if "tokens_per_s" in summary else "")
        out.print(f"{summary['episodes']} episodes in {summary['wall_s']:.1f} s "
                  f"({summary['episodes_per_s']} episodes/s){tok}", highlight=False)
    for name, c in summary["suites"].items():  # formats hook (issue #10): fractional scores
        if "mean_score" in c:
            out.print(f"{escape(printable(name))}: mean score {_rate(c['mean_score'])}, "
                      f"full score {_rate(c['full_score_rate'])}", highlight=False)
        if "strict_mean_score" in c:  # InterCode: new paths compared by content, not as InterCode does
            out.print(f"{escape(printable(name))}: strict (content-compared) mean score {_rate(c['strict_mean_score'])}, "
                      f"full score {_rate(c['strict_full_score_rate'])}", highlight=False)
