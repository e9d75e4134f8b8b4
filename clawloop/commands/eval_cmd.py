"""`clawloop eval`: run an agent (oracle, no-op or a policy) on task suites and report pass rates."""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer

from clawloop.commands import POLICY_SET_HELP, app, command_params, params_path, parse_sets, say_params
from clawloop.commands.out import FORCE_HELP, check_out, staged_dir
from clawloop.commands.tasks_cmd import BACKEND_HELP, EXECUTOR_HELP, FORMAT_HELP, SKIP_BAD_LINES_HELP
from clawloop.core.executor import executor_params
from clawloop.core.io import write_jsonl
from clawloop.core.progress import console
from clawloop.errors import ClawloopError, printable
from clawloop.phases.evaluate.agent_eval import EvalConfig, evaluate
from clawloop.policy.load import with_options

EPISODES_JSONL = "episodes.jsonl"
"""The episode records in `clawloop eval --out DIR` (one EpisodeRecord.to_json a line)."""

_EVAL_OUT_HELP = (f"A directory for this run: {EPISODES_JSONL} (one JSON line per episode) for every agent, and "
                  "the Parquet trajectories for --agent model. A directory for every agent, so that `clawloop "
                  "view DIR` and `clawloop diagnose DIR` read any run; it must be new or empty (--force replaces "
                  "an earlier run), and it appears whole when the run ends.")


@app.command("eval")
def eval_(
    suites: list[Path] = typer.Argument(..., help="Suites: a directory of Harbor tasks, one task directory, or a JSONL pool."),
    agent: str = typer.Option("oracle", "--agent", help="oracle | noop | model"),
    model: str | None = typer.Option(None, "--model", help="Policy for --agent model (DIR, vllm:DIR, openai:MODEL@URL)."),
    backend: str = typer.Option("bwrap", "--backend", help=BACKEND_HELP),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Episodes in parallel."),
    executor: str = typer.Option("local", "--executor", help=EXECUTOR_HELP + " Oracle and no-op agents only."),
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
    skip_bad_lines: bool = typer.Option(False, "--skip-bad-lines", help=SKIP_BAD_LINES_HELP
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
