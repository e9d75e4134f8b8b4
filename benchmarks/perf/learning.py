"""Does the default loop learn? Held-out pass@1 on benchmarks/shell-core after the bootstrap and
after each iteration, with the wall time of each phase.

    .venv/bin/python benchmarks/perf/learning.py [--json] [--runs runs]
    .venv/bin/python benchmarks/perf/learning.py --repro [--json] [--workdir DIR] [--set KEY=VALUE ...]
    .venv/bin/python benchmarks/perf/learning.py --drive [--json] [--params params.yaml]
        [--iterations 3] [--workdir DIR] [--set model.pretrain.steps=0 ...] [--max-tasks N]

--runs (default when runs/iter-0/metrics.json exists and --drive is not given): read what a
`dvc repro` left (runs/iter-*/metrics.json, train.json, validation.json, the bootstrap's
model_meta.json) and tabulate it.

--repro: the one command that reproduces the README's figures: a clone of this repository's
HEAD in --workdir (a temp dir by default; .venv, .runtime and .runtime-llama are shared by symlink), --set
edits of its params.yaml, one `dvc repro` with the wall time of every stage, then the table of
--runs on what it left. --profile NAME starts from profiles/NAME.yaml instead of params.yaml.

--repro --seeds 0,1: one clone and `dvc repro` per seed (synthesis.seed, rollout.seed, train.sft.seed
and train.grpo.seed set to it), then the spread: held-out pass@1 per iteration and seed, the
paired comparison of the seeds' final policies (their heldout.json), and per iteration whether
the two runs' validated pools and checkpoints are byte-identical (`--seeds 0,0` runs one seed
twice: where a checkpoint differs from an identical pool, the run is not deterministic).

--drive: run the loop's phases with the library in a work dir (a temp dir by default), with
params.yaml's knobs (--set overrides dotted keys, for ablations): bootstrap (pretraining
included) → evaluate; then per iteration synthesize → agent-free validation → train (from the
last promoted policy) → evaluate → gate. Simplifications against `dvc repro`, to keep it
cheap: no agent-based probe (every validated task is "unprobed" and trains SFT), no diagnosis
(synthesis uses the unconditioned plan), and the evaluation covers the held-out suite only.
--max-tasks evaluates a fixed subset of shell-core (by id) for quicker runs.

Prints a table; --json prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from clawloop.core.stats import wilson_interval  # noqa: E402


def _set(d: dict[str, Any], dotted: str, value: str) -> None:
    import yaml

    keys = dotted.split(".")
    for k in keys[:-1]:
        d = d.setdefault(k, {})
    d[keys[-1]] = yaml.safe_load(value)


def from_runs(runs: Path) -> dict[str, Any]:
    """Rows from a finished `dvc repro`."""
    rows = []
    meta_path = runs / "iter-0" / "policy" / "model_meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        pre = meta.get("pretrain") or {}
        row = {"phase": "bootstrap", "iteration": 0, "wall_s": pre.get("wall_time_s"), "base": meta.get("base")}
        if pre:  # a scratch base: its copy probe after pretraining
            row["copy"] = (pre.get("curve") or [{}])[-1].get("name_exact")
        rows.append(row)
    for d in sorted(runs.glob("iter-*"), key=lambda p: int(p.name.split("-")[1])):
        i = int(d.name.split("-")[1])
        for name, key in (("validation.json", "validate"), ("train.json", "train")):
            f = d / name
            if f.exists():
                m = json.loads(f.read_text())
                runtimes = [m[k] for k in ("sft_runtime_s", "grpo_runtime_s") if m.get(k)]
                row = {"phase": key, "iteration": i,
                       "wall_s": m.get("wall_s") or (round(sum(runtimes), 1) if runtimes else m.get("wall_time_s"))}
                if key == "validate" and m.get("probe"):
                    row["learnable"] = f"{m['probe'].get('learnable', 0)}/{m['probe'].get('tasks', 0)}"
                if key == "train" and "grpo_tasks" in m:  # sft+grpo / grpo: what GRPO had and did
                    row.update({k: m[k] for k in ("grpo_tasks", "grpo_reward", "grpo_runtime_s") if k in m})
                rows.append(row)
        f = d / "metrics.json"
        if f.exists():
            m = json.loads(f.read_text())
            row = {"phase": "evaluate", "iteration": i, "wall_s": m.get("wall_s"),
                   "pass_at_1": m.get("heldout_pass_rate"), "promoted": m.get("promoted")}
            summary = d / "eval" / "summary.json"  # per-suite figures (metrics.json keeps the headline)
            suites = json.loads(summary.read_text()).get("suites", {}) if summary.exists() else m.get("suites") or {}
            for name, s in suites.items():
                if s.get("heldout") and s.get("episodes"):
                    lo, hi = wilson_interval(s["passed"], s["episodes"] - s.get("skipped", 0) - s.get("errors", 0))
                    row[name] = f"{s['passed']}/{s['episodes']} [{lo:.3f}, {hi:.3f}]"
            rows.append(row)
    transfer = runs / "transfer" / "transfer.json"
    if transfer.exists():
        t = json.loads(transfer.read_text())
        if t.get("pass_at_1"):
            rows.append({"phase": "transfer", "iteration": "-", "wall_s": None, "base": t.get("base"),
                         **{f"pass_at_1_{k}": v for k, v in t["pass_at_1"].items()}, "gain": t.get("gain")})
    return {"mode": "runs", "runs": str(runs), "rows": rows, "paired": paired_rows(runs),
            "heldout_pass_at_1": [r["pass_at_1"] for r in rows if r["phase"] == "evaluate"]}


def paired_rows(runs: Path) -> list[dict[str, Any]]:
    """Paired held-out comparisons on the same tasks (`clawloop compare`'s figures: exact McNemar,
    paired bootstrap), per suite and in all: the base and iteration 1 against the last iteration's
    checkpoint, and the base against the policy the loop ends with (the gate's pick)."""
    from clawloop.artifacts.metrics import read_heldout
    from clawloop.core import paired

    records = {int(d.name.split("-")[1]): read_heldout(d / "heldout.json")
               for d in runs.glob("iter-*") if (d / "heldout.json").exists()}
    if len(records) < 2:
        return []
    last = max(records)
    pairs = [(f"{a}", records[a].checkpoint, f"{last}", records[last].checkpoint) for a in (0, 1) if a in records
             and a < last]
    pairs.append(("0", records[last].base, f"policy (iteration {records[last].policy_from})", records[last].policy))
    out = []
    for a, before, b, after in pairs:
        for suite, c in paired.compare_suites(before, after).items():
            if c.paired:
                out.append({"before": a, "after": b, "suite": suite, "paired": c.paired, "gained": c.gained,
                            "lost": c.lost, "p": c.p_two_sided, "diff": round(c.diff, 4),
                            "diff_95": [round(c.diff_low, 4), round(c.diff_high, 4)]})
    return out


SEED_KEYS = ("synthesis.seed", "rollout.seed", "train.sft.seed", "train.grpo.seed")
"""What --seeds sets (model.seed only seeds a scratch base; the pretrained default has none)."""


def repro(workdir: Path, sets: list[str], profile: str | None = None) -> dict[str, Any]:
    """Clone HEAD into `workdir`, apply `sets` to its params.yaml (profiles/`profile`.yaml when
    given), `dvc repro` timing each stage."""
    import re
    import shutil
    import subprocess

    import yaml

    repo = workdir / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    if profile:
        shutil.copy2(repo / "profiles" / f"{profile}.yaml", repo / "params.yaml")
    for shared in (".venv", ".runtime", ".runtime-llama"):
        if (ROOT / shared).exists():  # .runtime-llama is optional (rollout.backend: auto falls back to hf)
            (repo / shared).symlink_to((ROOT / shared).resolve())
    intercode = Path("benchmarks/intercode/tasks")  # not in git: this checkout's export, if any
    if (ROOT / intercode).is_dir():
        shutil.copytree(ROOT / intercode, repo / intercode)
    else:
        print(f"{intercode} not exported here: InterCode-Bash is skipped (benchmarks/intercode/README.md)")
    if sets:
        raw = yaml.safe_load((repo / "params.yaml").read_text())
        if "iterations" in raw.get("loop", {}):  # keep DVC's string keys (it drops integer ones)
            raw["loop"]["iterations"] = {str(k): v for k, v in raw["loop"]["iterations"].items()}
        for kv in sets:
            key, _, value = kv.partition("=")
            _set(raw, key, value)
        (repo / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    env = {**os.environ, "PATH": f"{repo / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    t0 = time.time()
    stages: list[dict[str, Any]] = []
    with subprocess.Popen(["dvc", "repro"], cwd=repo, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as p:
        assert p.stdout is not None
        for line in p.stdout:
            print(line, end="", flush=True)
            m = re.match(r"Running stage '([^']+)'", line)
            if m:
                now = time.time() - t0
                if stages:
                    stages[-1]["wall_s"] = round(now - stages[-1]["start_s"], 1)
                stages.append({"stage": m.group(1), "start_s": round(now, 1)})
    if stages:
        stages[-1]["wall_s"] = round(time.time() - t0 - stages[-1]["start_s"], 1)
    if p.returncode != 0:
        raise SystemExit(f"dvc repro exited {p.returncode} in {repo}")
    result = from_runs(repo / "runs")
    result.update(mode="repro", repo=str(repo), total_wall_s=round(time.time() - t0, 1), stages=stages)
    return result


def _digest(path: Path) -> str | None:
    """sha256 of a file, or of a directory's files (names and contents), None when absent."""
    import hashlib

    if not path.exists():
        return None
    h = hashlib.sha256()
    for f in sorted(p for p in ([path] if path.is_file() else path.rglob("*")) if p.is_file()):
        h.update(f.relative_to(path).as_posix().encode() + b"\0" if path.is_dir() else b"")
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def seeds(workdir: Path, seed_list: list[int], sets: list[str], profile: str | None) -> dict[str, Any]:
    """`repro` once per seed, then the spread between the runs."""
    from clawloop.core import paired

    runs = []
    for k, seed in enumerate(seed_list):
        result = repro(workdir / f"run-{k}-seed-{seed}", [*sets, *(f"{key}={seed}" for key in SEED_KEYS)], profile)
        runs.append({"seed": seed, "result": result, "runs": Path(result["repo"]) / "runs"})
    iters = sorted({int(d.name.split("-")[1]) for r in runs for d in r["runs"].glob("iter-*")})
    rows = []
    for i in iters:
        rates = []
        for r in runs:
            m = r["runs"] / f"iter-{i}" / "metrics.json"
            rates.append(json.loads(m.read_text())["heldout_pass_rate"] if m.exists() else None)
        known = [x for x in rates if x is not None]
        row = {"phase": "evaluate", "iteration": i, "wall_s": None, "pass_at_1": None,
               "per_seed": rates, "spread": round(max(known) - min(known), 4) if known else None}
        for what, rel in (("pool", "validated/valid.jsonl"), ("checkpoint", "checkpoint")):
            digests = {_digest(r["runs"] / f"iter-{i}" / rel) for r in runs}
            if digests != {None}:
                row[f"same_{what}"] = len(digests) == 1
        rows.append(row)
    finals = [r["runs"] / f"iter-{max(iters)}" / "heldout.json" for r in runs]
    between = None
    if len(runs) >= 2 and all(f.exists() for f in finals[:2]):
        a, b = (json.loads(f.read_text())["policy"] for f in finals[:2])
        between = paired.compare(a, b).to_dict()
        print(f"[learning] final policies, seed {runs[1]['seed']} against seed {runs[0]['seed']}: "
              f"{paired.compare(a, b).words()}")
    return {"mode": "seeds", "seeds": seed_list, "rows": rows, "final_between_seeds": between,
            "repos": [str(r["result"]["repo"]) for r in runs],
            "total_wall_s": round(sum(r["result"]["total_wall_s"] for r in runs), 1)}


def drive(params_path: Path, sets: list[str], iterations: int | None, workdir: Path,
          max_tasks: int | None, start: Path | None = None, skip_eval0: bool = False) -> dict[str, Any]:
    import yaml

    from clawloop.artifacts import metrics as artifact_metrics
    from clawloop.bootstrap.base import make_base
    from clawloop.config.params import Params
    from clawloop.core import rollout_settings as settings
    from clawloop.core.paired import outcomes_of
    from clawloop.core.tasks.formats import load_suite_any
    from clawloop.core.tasks.pool import id_sample
    from clawloop.phases.evaluate import gate as gating
    from clawloop.phases.synthesize.procedural.generate import synthesize
    from clawloop.phases.synthesize.steering import plan
    from clawloop.phases.train.jobs import TrainJob, train
    from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool

    raw = yaml.safe_load(params_path.read_text())
    for s in sets:
        k, v = s.split("=", 1)
        _set(raw, k, v)
    params = Params.model_validate(raw)
    n_iter = iterations or len(params.loop.iterations)
    suite = params.eval.suites[0]
    heldout = load_suite_any(str(ROOT / suite.path), suite.format, name=suite.name).tasks
    heldout = id_sample(heldout, max_tasks) if max_tasks else heldout
    ctx = settings.rollout_settings(params)
    rows: list[dict[str, Any]] = []

    def evaluate(policy_dir: Path, i: int) -> dict[str, float]:
        t0 = time.time()
        policy = ctx.load_policy(policy_dir, policy_id=f"iter-{i}")
        res = ctx.rollouts(heldout, policy, k=params.eval.samples, harness=ctx.harness_for(policy_dir),
                           iteration=i, suite=suite.name, progress=False)
        m = artifact_metrics.suite_metrics(res, heldout=True)
        passed = sorted({r.task_id for r in res if r.outcome == "passed"})
        names = {t.id: t.metadata.get("name", t.id[:8]) if isinstance(t.metadata, dict) else t.id[:8]
                 for t in heldout}
        rows.append({"phase": "evaluate", "iteration": i, "wall_s": round(time.time() - t0, 1),
                     "pass_at_1": round(m.pass_at_1, 4), "passed": [names.get(p, p[:8]) for p in passed]})
        print(f"[learning] iter {i} evaluate: pass@1 {m.pass_at_1:.3f} ({m.passed}/{m.tasks})"
              f" in {rows[-1]['wall_s']} s", flush=True)
        return outcomes_of(res, suite.name)

    t0 = time.time()
    if start is not None:  # an existing bootstrap dir (e.g. kept by benchmarks/perf/pretrain.py --out)
        policy = start
        meta = json.loads((start / "model_meta.json").read_text())
    else:
        policy = workdir / "iter-0" / "policy"
        m = params.model
        meta = make_base(m.base, policy, seed=m.seed, bootstrap=m.bootstrap, pretrain=m.pretrain)
    pre = meta.get("pretrain") or {}
    rows.append({"phase": "bootstrap", "iteration": 0,
                 "wall_s": round(time.time() - t0, 1) if start is None else pre.get("wall_time_s"),
                 "copy": (pre.get("curve") or [{}])[-1].get("name_exact")})
    print(f"[learning] bootstrap: {meta['params']:,} params, copy probe {rows[-1]['copy']}"
          f" in {rows[-1]['wall_s']} s", flush=True)
    best = None if skip_eval0 else evaluate(policy, 0)   # the promoted policy's held-out verdicts
    tp = params.train.options().model_copy(update={"dvclive": False})
    syn = params.synthesis
    for i in range(1, n_iter + 1):
        t0 = time.time()
        tasks = synthesize(plan(None, syn.tasks_per_iteration, syn.curriculum, syn.skills),
                           syn.seed + i, i)
        kept, _ = validate_pool(tasks, params.sandbox.backend, params.sandbox.jobs, heldout,
                                AgentFreeParams(near_duplicate_threshold=params.validation.near_duplicate_threshold))
        rows.append({"phase": "synthesize+validate", "iteration": i, "wall_s": round(time.time() - t0, 1),
                     "tasks": len(kept)})
        t0 = time.time()
        ckpt = workdir / f"iter-{i}" / "checkpoint"
        metrics = train(TrainJob(params.train.method, policy, kept, ckpt), tp)
        rows.append({"phase": "train", "iteration": i, "wall_s": round(time.time() - t0, 1),
                     "loss": metrics.get("sft_train_loss"), "steps": metrics.get("steps")})
        print(f"[learning] iter {i} train: {metrics.get('steps')} steps, loss {metrics.get('sft_train_loss')}"
              f" in {rows[-1]['wall_s']} s", flush=True)
        verdicts = evaluate(ckpt, i)
        # the loop's gate, suite guard included (one held-out suite here: it adds nothing to the pooled test)
        promoted, vs, _ = gating.gate(verdicts, best, params.gate.alpha, params.gate.enabled, params.gate.suite_alpha)
        rows[-1]["promoted"] = promoted
        if vs is not None:
            rows[-1]["vs_policy"] = vs.words()
        if promoted:
            policy, best = ckpt, verdicts
    return {"mode": "drive", "params": str(params_path), "set": sets, "rows": rows,
            "heldout_tasks": len(heldout),
            "heldout_pass_at_1": [r["pass_at_1"] for r in rows if r["phase"] == "evaluate"],
            "total_wall_s": round(sum(r["wall_s"] or 0 for r in rows), 1), "load_avg": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--runs", type=Path, default=ROOT / "runs")
    ap.add_argument("--drive", action="store_true")
    ap.add_argument("--repro", action="store_true", help="clone HEAD, dvc repro, tabulate (see the docstring)")
    ap.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    ap.add_argument("--set", action="append", default=[], help="dotted.key=yaml-value (repeatable)")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--max-tasks", type=int, default=None)
    ap.add_argument("--policy", type=Path, default=None, help="start from this bootstrap dir (skip the bootstrap)")
    ap.add_argument("--skip-eval0", action="store_true", help="do not evaluate the starting policy")
    ap.add_argument("--seeds", type=lambda v: [int(x) for x in v.split(",")], default=None,
                    help="with --repro: one run per seed, comma-separated (0,1; 0,0 checks determinism)")
    ap.add_argument("--profile", default=None, help="with --repro: start from profiles/NAME.yaml")
    args = ap.parse_args()

    if args.repro:
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="clawloop-repro-"))
        workdir.mkdir(parents=True, exist_ok=True)
        result = (seeds(workdir, args.seeds, args.set, args.profile) if args.seeds
                  else repro(workdir, args.set, args.profile))
    elif args.drive or not (args.runs / "iter-0" / "metrics.json").exists():
        if args.workdir:
            result = drive(args.params, args.set, args.iterations, args.workdir, args.max_tasks,
                               args.policy, args.skip_eval0)
        else:
            with tempfile.TemporaryDirectory(prefix="clawloop-learning-") as tmp:
                result = drive(args.params, args.set, args.iterations, Path(tmp), args.max_tasks,
                               args.policy, args.skip_eval0)
    else:
        result = from_runs(args.runs)
    print(f"{'iter':>4}  {'phase':<20} {'wall_s':>8}  {'pass@1':>7}  notes")
    for r in result["rows"]:
        p = r.get("pass_at_1")
        notes = {k: v for k, v in r.items() if k not in ("phase", "iteration", "wall_s", "pass_at_1")}
        print(f"{r['iteration']:>4}  {r['phase']:<20} {r['wall_s'] if r['wall_s'] is not None else '-':>8}"
              f"  {'' if p is None else f'{p:.3f}':>7}  {json.dumps(notes) if notes else ''}")
    for c in result.get("paired", []):
        print(f"paired {c['before']} -> {c['after']} {c['suite']:<16} n={c['paired']:<4} +{c['gained']} -{c['lost']}"
              f"  McNemar p={c['p']:.3f}  diff {c['diff']:+.3f} [{c['diff_95'][0]:+.3f}, {c['diff_95'][1]:+.3f}]")
    for st in result.get("stages", []):
        print(f"stage {st['stage']:<22} {st.get('wall_s', '-'):>8} s")
    if "total_wall_s" in result and "repo" in result:
        print(f"dvc repro: {result['total_wall_s'] / 60:.1f} min in {result['repo']}")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
