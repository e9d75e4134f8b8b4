"""Replay published InterCode-Bash trajectories through clawloop's adapter; compare rewards.

    .venv/bin/python benchmarks/intercode/replay.py OUT [--model gpt-4 --model vicuna]
        [--per-model 20] [--seed 0] [--jobs 2] [--quoting docker|bash] [--out replay.jsonl]

OUT is an export (benchmarks/intercode/fetch.py). For each sampled record of
`data/results/bash/<model>/ic_bash_multiturn_<model>_10_turns_fs_N.json`, a scripted agent
replays the recorded actions the way InterCode's BashEnv ran them, and the adapter's reward is
compared with the one recorded for the last graded turn (InterCode graded after every action:
`step(action)` then `step("submit")`, the container kept between turns). Emulated:

- a turn without code (InterCode's retry message) runs nothing; `skip` runs nothing but is
  graded on the previous observation;
- `cd ...` actions: InterCode rewrites them to `cd <resolved path>`, run in /, and keeps the
  path as the working directory of later actions when that exits 0 (a path that does not exist
  makes later actions fail with docker's "chdir to cwd" error, reproduced);
- docker's quoting (`--quoting docker`, default): BashEnv.clean_cmd sends `/bin/bash -c
  "<action>"` as one string, which docker-py splits with shlex: double quotes inside the action
  end the outer ones (`-name "*.py"` runs as `-name *.py`, `awk '{print "a b"}'` breaks). Each
  action and the gold command are transformed so; an action shlex cannot split is InterCode's
  "Malformed command";
- a command over 10 s is "Command timed out".

Agreement: |replayed - recorded| < 0.005. Differences are listed with the terms of both sides
where the record allows (it keeps the observations, not the terms).
"""

from __future__ import annotations

import argparse
import json
import posixpath
import random
import shlex
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from clawloop.core.agent.oracle import run_episode
from clawloop.core.tasks import intercode as ic
from clawloop.core.tasks.environment import TaskEnvironment
from clawloop.core.tasks.task import FileSpec, Solution, Task
from sandbox.base import ExecResult

RETRY = "No bash code was found in your last response."
CHDIR = ('OCI runtime exec failed: exec failed: unable to start container process: chdir to cwd ({}) set in '
         'config.json failed: no such file or directory: unknown\r\n')


def simplify_path(current: str, changed: str) -> str:
    """Where InterCode's `cd` tracking lands: `changed` resolved against `current`, lexically
    (".." stops at /, no trailing or doubled slash)."""
    if not changed:
        return current
    return "/" + posixpath.normpath(posixpath.join(current, changed)).lstrip("/")


def docker_command(action: str, quoting: str = "docker") -> str | None:
    """The bash command docker ran for `/bin/bash -c "<action>"` (None: shlex could not split it)."""
    if quoting == "bash":
        return action.strip()
    try:
        argv = shlex.split(f'/bin/bash -c "{action.strip()}"')
    except ValueError:
        return None
    if len(argv) <= 3:
        return argv[2] if len(argv) == 3 else ""
    return "bash -c " + " ".join(shlex.quote(a) for a in argv[2:])


def intercode_step(action: str, workdir: str, quoting: str) -> tuple[str, str | None]:
    """(command to run through env.exec, the new working directory if it is a cd that succeeds)."""
    new_wd = None
    if action.startswith("cd"):
        try:
            cd_arg = action[action.index("cd ") + 3:].strip()
        except ValueError:  # InterCode raised here ("cd" without a space)
            cd_arg = None
        if cd_arg is not None:
            new_wd = simplify_path(workdir, cd_arg)
            action, workdir = f"cd {new_wd}", "/"
    cmd = docker_command(action, quoting)
    if cmd is None:
        return "printf %s 'Malformed command'", None
    if workdir != "/":
        cmd = (f"cd {shlex.quote(workdir)} 2>/dev/null || {{ printf %s {shlex.quote(CHDIR.format(json.dumps(workdir)))}"
               f"; exit 126; }}\n{cmd}")
    return cmd, new_wd


def graded_turns(th: dict[str, Any]) -> tuple[list[str], int] | None:
    """(actions that ran, up to the last graded turn; that turn's index), None if none was graded."""
    acts, obs = th["actions"], th["observations"]
    last = None
    for i, (a, o) in enumerate(zip(acts, obs, strict=False)):
        if a == "blocked" or str(o).startswith(RETRY):
            continue
        last = i
    if last is None:
        return None
    ran = [a for a, o in zip(acts[:last + 1], obs[:last + 1], strict=False)
           if a not in ("skip", "blocked") and not str(o).startswith(RETRY)]
    return ran, last


def scripted(actions: list[str], quoting: str):  # noqa: ANN201 (a SimpleAgent)
    def agent(env: TaskEnvironment) -> list[ExecResult]:
        wd, out = "/", []
        for a in actions:
            cmd, new_wd = intercode_step(a, wd, quoting)
            r = env.exec(cmd, timeout=ic.COMMAND_TIMEOUT_S)
            if new_wd is not None and r.exit_code == 0 and not r.timed_out:
                wd = new_wd
            out.append(r)
        return out
    agent.__name__ = "replay"
    return agent


def with_gold(task: Task, quoting: str) -> Task:
    """The task with its gold command as docker ran it."""
    spec = ic.task_spec(task)
    gold = docker_command(spec["gold"], quoting)
    spec["gold"] = gold if gold is not None else "printf %s 'Malformed command'"
    files = {**task.verifier.files, ic.TASK_FILE: FileSpec.of(json.dumps(spec, ensure_ascii=False, indent=1))}
    return task.model_copy(update={"verifier": task.verifier.model_copy(update={"files": files}),
                                   "solution": Solution(steps=[ic.gold_command(spec["gold"])])})


def results(root: Path, model: str) -> list[tuple[int, int, dict[str, Any]]]:
    out = []
    for fs in range(1, 5):
        p = root / "data/results/bash" / model / f"ic_bash_multiturn_{model}_10_turns_fs_{fs}.json"
        if not p.is_file():
            print(f"note: {p} is missing", file=sys.stderr)
            continue
        for k, rec in json.loads(p.read_text()).items():
            out.append((fs, int(k), rec))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export", type=Path)
    ap.add_argument("--model", action="append", default=None, help="results dir name (repeatable)")
    ap.add_argument("--per-model", type=int, default=20, help="records sampled per model (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quoting", choices=("docker", "bash"), default="docker")
    ap.add_argument("--backend", default="bwrap")
    ap.add_argument("--out", type=Path, default=None, help="one JSON line per replayed record")
    a = ap.parse_args()
    tasks = {t.metadata[ic.KEY]["name"]: t for t in ic.load_intercode(a.export)}
    jobs = []
    for model in a.model or ["gpt-4", "vicuna"]:
        recs = results(a.export, model)
        random.Random(f"{a.seed}-{model}").shuffle(recs)
        for fs, idx, rec in recs[:a.per_model or None]:
            g = graded_turns(rec["turn_history"])
            if g is not None:
                jobs.append((model, f"fs{fs}-{idx:02d}", rec, *g))

    def one(job: tuple[str, str, dict[str, Any], list[str], int]) -> dict[str, Any]:
        model, name, rec, actions, last = job
        task = with_gold(tasks[name], a.quoting)
        er = run_episode(task, scripted(actions, a.quoting), a.backend, name=name)
        th = rec["turn_history"]
        recorded = float(th["rewards"][last])
        last_obs = next((s.output for s in reversed(er.steps)), None)
        return {"model": model, "task": name, "turn": last, "actions": len(actions), "recorded": recorded,
                "replayed": er.reward, "outcome": er.outcome, "reason": er.reason,
                "agree": er.reward is not None and abs(er.reward - recorded) < 0.005,
                "same_last_observation": last_obs is not None and last_obs == th["observations"][last],
                "scores": er.scores}

    with ThreadPoolExecutor(a.jobs) as pool:
        rows = list(pool.map(one, jobs))
    if a.out:
        a.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for model in a.model or ["gpt-4", "vicuna"]:
        mine = [r for r in rows if r["model"] == model]
        ok = sum(r["agree"] for r in mine)
        succ = sum((r["replayed"] or 0) >= 1 - 1e-9 for r in mine), sum(r["recorded"] >= 1 - 1e-9 for r in mine)
        print(f"{model}: {ok}/{len(mine)} rewards agree; success replayed {succ[0]}, recorded {succ[1]}")
        for r in mine:
            if not r["agree"]:
                s = r["scores"] or {}
                print(f"  {r['task']} turn {r['turn']}: recorded {r['recorded']:.2f}, replayed "
                      f"{r['replayed'] if r['replayed'] is None else round(r['replayed'], 2)} "
                      f"(diff {s.get('file_diff')}, changes {s.get('file_changes')}, answer "
                      f"{s.get('answer_similarity')}; same last observation: {r['same_last_observation']})"
                      + (f" {r['reason']}" if r["reason"] else ""))


if __name__ == "__main__":
    main()
