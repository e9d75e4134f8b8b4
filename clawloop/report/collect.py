"""Everything the report shows, gathered from runs/ into plain dicts (no drawing, no HTML).

Sources per iteration: metrics.json (headline, gate), eval/summary.json (per-suite figures; older
runs kept them in metrics.json), diagnosis/diagnosis.json (cells, failure modes,
recommendations), pool/manifest.json (what synthesis did with the previous diagnosis),
validated/valid.jsonl, train.json, heldout.json (per-task held-out verdicts: the paired
evidence). Intervals are Wilson 95% for rates, as in the diagnosis; differences between
iterations are paired (clawloop.core.paired: flips, exact McNemar p, bootstrap interval).

runs/ may come from a DVC remote, i.e. from anyone: every artifact with a schema is checked
against the one `clawloop check` uses (metrics, summary, heldout, diagnosis, playbook) before a
figure is taken from it, and what the others feed in is read under `_reading`, so a malformed
file ends in one line naming it (and the field), never in a traceback.
"""

from __future__ import annotations

import contextlib
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from clawloop.core import paired
from clawloop.core.io import iter_jsonl, read_json
from clawloop.core.stats import wilson_interval
from clawloop.errors import ClawloopError, describe_validation_error, validated


def iteration_dirs(runs: Path) -> list[tuple[int, Path]]:
    found = []
    for d in runs.glob("iter-*"):
        m = re.fullmatch(r"iter-(\d+)", d.name)
        if m and d.is_dir():
            found.append((int(m.group(1)), d))
    return sorted(found)


def _read(path: Path, load: Callable[[Path], Any] = read_json) -> Any:
    """What `load` makes of the file at `path` (None when missing). The schema's loaders give the
    validated values back, so a rate that came as the string "0.5" is the number 0.5 here."""
    return load(path) if path.exists() else None


def _dumped(reader: Callable[[Path], BaseModel]) -> Callable[[Path], dict[str, Any]]:
    """A schema's reader (it raises a one-line ClawloopError) giving the validated model as JSON,
    with only the fields the file set (the report tells older layouts by what is absent)."""
    return lambda path: reader(path).model_dump(mode="json", exclude_unset=True)


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Figures taken from a file without a schema: a wrong shape is a one-line error naming it."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as e:
        what = f"{e.args[0]}: missing" if isinstance(e, KeyError) and e.args else f"{type(e).__name__}: {e}"
        raise ClawloopError(f"{path}: malformed ({what})") from None


def _metrics(path: Path) -> dict[str, Any]:
    """metrics.json validated by IterationMetrics; runs from before eval/summary.json kept the
    suites (held to SuiteMetrics) and episodes_per_s in it."""
    from clawloop.artifacts.metrics import IterationMetrics, SuiteMetrics

    obj = read_json(path)
    suites = None
    if isinstance(obj, dict) and "suites" in obj:
        try:
            suites = TypeAdapter(dict[str, SuiteMetrics]).validate_python(obj["suites"])
        except ValidationError as e:
            raise ClawloopError(f"{path}: {describe_validation_error(e, 'suites')}") from None
    if isinstance(obj, dict):  # the older layout's keys, now in eval/summary.json (EvalDetail)
        obj = {k: v for k, v in obj.items() if k not in ("suites", "episodes_per_s")}
    out = validated(IterationMetrics, obj, str(path)).model_dump(mode="json", exclude_unset=True)
    if suites is not None:
        out["suites"] = {name: s.model_dump(mode="json", exclude_unset=True) for name, s in suites.items()}
    return out


def _json_object(path: Path) -> dict[str, Any]:
    obj = read_json(path)
    if not isinstance(obj, dict):
        raise ClawloopError(f"{path}: expected a JSON object")
    return obj


def _gated(s: dict[str, Any]) -> bool:
    """A held-out suite of every iteration (not `at: ends`): the held-out pass@1's and the gate's."""
    return s.get("heldout", True) and s.get("at", "every") == "every"


def _graded(s: dict[str, Any]) -> int:
    return s.get("graded") or max(0, s["episodes"] - s.get("errors", 0) - s.get("skipped", 0))


def _heldout(metrics: dict[str, Any], suites: dict[str, Any]) -> dict[str, Any]:
    """Held-out pass@1 with its interval: metrics.json's, or recomputed from the suites (older runs)."""
    rate = metrics["heldout_pass_rate"]
    if "heldout_ci_low" in metrics:
        low, high = metrics["heldout_ci_low"], metrics["heldout_ci_high"]
        n = sum(_graded(s) for s in suites.values() if _gated(s))
    else:
        held = [s for s in suites.values() if _gated(s)]
        n = sum(_graded(s) for s in held)
        low, high = wilson_interval(sum(s["passed"] for s in held), n)
    return {"rate": rate, "low": low, "high": high, "n": n}


def _skill_rates(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Pass rate per skill (levels pooled) with a Wilson interval."""
    acc: dict[str, list[int]] = {}
    for c in report.get("cells", []):
        a = acc.setdefault(c["skill"], [0, 0])
        a[0] += c["passes"]
        a[1] += c["episodes"]
    out = {}
    for skill, (p, n) in acc.items():
        low, high = wilson_interval(p, n)
        out[skill] = {"rate": p / n if n else 0.0, "low": low, "high": high, "passes": p, "n": n}
    return out


def _synthesis(manifest: dict[str, Any]) -> dict[str, Any]:
    """What synthesis did, per skill: the curriculum's decision, quotas by level, knobs; per routine budgets."""
    proc = (manifest.get("routines") or {}).get("procedural") or {}
    plan = proc.get("plan") or {}
    skills: dict[str, dict[str, Any]] = {}
    for q in plan.get("quotas", []):
        # typed here: the report sorts and sums them later, outside this file's _reading
        skill, level, n = str(q["skill"]), int(q["level"]), int(q["n"])
        s = skills.setdefault(skill, {"quotas": {}, "knobs": []})
        s["quotas"][level] = s["quotas"].get(level, 0) + n
    for skill, d in (plan.get("decisions") or {}).items():
        s = skills.setdefault(skill, {"quotas": {}, "knobs": []})
        s["decision"] = d
    for skill, k in (plan.get("knobs") or {}).items():
        s = skills.setdefault(skill, {"quotas": {}, "knobs": []})
        s["knobs"] = [f"{name}={v}" if not isinstance(v, bool) else name for name, v in k.items() if v]
    return {"skills": skills, "budgets": manifest.get("budgets", {}), "conditioned": bool(proc.get("report")),
            "knob_fraction": plan.get("knob_fraction"), "tasks": manifest.get("tasks")}


def _wall(d: Path, metrics: dict[str, Any] | None, train: dict[str, Any] | None) -> dict[str, float]:
    """Seconds spent per phase, as far as the stages recorded them."""
    wall: dict[str, float] = {}
    if metrics and "wall_s" in metrics:
        wall["evaluate"] = float(metrics["wall_s"])
    if train:
        t = sum(float(v) for k, v in train.items() if k.endswith("runtime_s") and isinstance(v, int | float))
        if t:
            wall["train"] = t
    return wall


def _harness_words(edits: dict[str, Any] | None) -> list[str]:
    return [f"{k} {v}" for k, v in sorted((edits or {}).items()) if v is not None]


def _learned(art: Path, iteration: int) -> dict[str, Any] | None:
    """What the playbook methods learned in one iteration (runs/iter-N/playbook/): the tips added
    and pruned, the reflector's edits, the harness edits tried on the dev split and kept; None
    for weight-only methods (an empty playbook)."""
    from clawloop.core.agent.playbook import read_playbook

    book = _read(art / "playbook.json", _dumped(read_playbook))
    if not book or not (book.get("entries") or book.get("pruned") or _harness_words(book.get("harness"))):
        return None
    added = [{"kind": e["kind"], "about": e.get("skill") or e.get("failure_mode") or "",
              "text": e.get("text") or ((e.get("example") or {}).get("instruction") or "")[:160],
              "evidence": e.get("evidence", "")}
             for e in book.get("entries", []) if e.get("added_iteration") == iteration]
    pruned = [{"kind": p["kind"], "about": p.get("skill") or p.get("failure_mode") or "", "reason": p.get("reason", "")}
              for p in book.get("pruned", [])]
    reflection = _read(art / "reflection.json", _json_object) or {}
    verdicts = Counter(r.get("status") for r in reflection.get("edits", []))
    dropped = [r.get("reason", "") for r in reflection.get("edits", []) if r.get("status") != "accepted"]
    search = _read(art / "harness.json", _json_object) or {}
    trials = [{"change": t.get("change", ""), "source": t.get("source", ""), "kept": t.get("kept", False),
               "verdict": t.get("verdict", ""), "why": t.get("why", "")} for t in search.get("trials", [])]
    return {"tips": len([e for e in book.get("entries", []) if e.get("kind") == "tip"]),
            "examples": len([e for e in book.get("entries", []) if e.get("kind") == "example"]),
            "tokens": book.get("tokens", 0), "token_budget": book.get("token_budget"),
            "added": added, "pruned": pruned, "harness": _harness_words(book.get("harness")),
            "reflector": reflection.get("reflector"), "accepted": verdicts.get("accepted", 0),
            "dropped": len(dropped), "dropped_reasons": dropped[:6], "fallback": bool(reflection.get("fallback")),
            "parse_error": reflection.get("parse_error"), "trials": trials,
            "dev_tasks": len(search.get("dev_tasks") or []), "search_skipped": search.get("skipped")}


def collect(runs: str | Path) -> dict[str, Any]:
    """Gather every figure the report shows from the runs directory."""
    runs = Path(runs)
    iters = iteration_dirs(runs)
    if not iters:
        raise ClawloopError(f"{runs}: no iteration directories (iter-N) found; run `dvc repro` first")
    data: dict[str, Any] = {"iterations": [], "suites": {}, "skills": {}, "modes": {}, "pools": {},
                            "metrics": {}, "heldout": {}, "diagnoses": {}, "synthesis": {}, "wall": {},
                            "mtimes": {}, "records": {}, "baselines": {}, "learned": {}, "ends": set(), "drift": {}}
    from clawloop.artifacts import IterDir
    from clawloop.artifacts.diagnosis import load_diagnosis
    from clawloop.artifacts.metrics import read_eval_detail, read_heldout

    for i, d in iters:
        it = IterDir(d)
        data["iterations"].append(i)
        metrics = _read(it.metrics_json, _metrics)
        detail = _read(it.eval / "summary.json", _dumped(read_eval_detail))
        suites = (detail or {}).get("suites") or (metrics or {}).get("suites") or {}
        for name, s in suites.items():
            data["suites"].setdefault(name, {})[i] = s["pass_at_1"]
            if s.get("at") == "ends":
                data["ends"].add(name)
            if s.get("baselines"):
                data["baselines"].setdefault(name, {})[i] = {"suite": s, "published": s["baselines"]}
        record = _read(it.heldout_json, _dumped(read_heldout))
        if record:
            data["records"][i] = record
        if metrics:
            data["metrics"][i] = metrics
            data["heldout"][i] = _heldout(metrics, suites)
            data["mtimes"][i] = it.metrics_json.stat().st_mtime
        train = _read(it.train_json, _json_object)
        with _reading(it.train_json):
            data["wall"][i] = _wall(d, metrics, train)
            if train and "kl_to_start" in train:  # how far training moved the policy (train.drift, #76)
                per = sorted(float(c["kl"]) for c in train.get("kl_to_start_per_conversation", []))
                data["drift"][i] = {"kl": float(train["kl_to_start"]), "median": statistics.median(per) if per else None,
                                    "max": per[-1] if per else None, "tokens": train.get("kl_to_start_tokens"),
                                    "conversations": len(per), "s": train.get("kl_to_start_s")}
        rep = _read(it.diagnosis_json, _dumped(load_diagnosis))
        if rep:
            data["diagnoses"][i] = rep
            for skill, r in _skill_rates(rep).items():
                data["skills"].setdefault(skill, {})[i] = r
            for fm in rep.get("failure_modes", []):
                data["modes"].setdefault(fm["mode"], {})[i] = fm["count"]
        with _reading(it.playbook):
            learned = _learned(it.playbook, i)
        if learned:
            data["learned"][i] = learned
        manifest = _read(it.pool / "manifest.json", _json_object)
        if manifest:
            with _reading(it.pool / "manifest.json"):
                data["synthesis"][i] = _synthesis(manifest)
        pool = it.validated / "valid.jsonl"
        if pool.exists():
            skills: Counter[str] = Counter()
            levels: list[int] = []
            for lineno, t in iter_jsonl(pool):
                with _reading(pool.with_name(f"{pool.name}:{lineno}")):
                    skills[str(t.get("skill", "?"))] += 1
                    levels.append(int(t.get("level", 1)))
            data["pools"][i] = {"skills": dict(skills), "tasks": len(levels),
                                "mean_level": sum(levels) / len(levels) if levels else 0.0}
    transfer = runs / "transfer" / "transfer.json"
    if transfer.exists():
        data["transfer"] = _read(transfer, _json_object)
    sampled = runs / "sampled" / "vs-base.json"
    if sampled.exists():
        data["sampled"] = _read(sampled, _json_object)
    ends = runs / "ends" / "final" / "outcomes.json"  # the final policy on the `at: ends` suites
    if ends.exists():
        got = _read(ends, _json_object)
        with _reading(ends):
            data["ends_final"] = {"policy_from": int(got["policy_from"]), "suites": [str(n) for n in got["suites"]],
                                  "verdicts": {str(k): float(v) for k, v in got["verdicts"].items()}}
        data["ends"] |= set(data["ends_final"]["suites"])
    return data


def sampled(data: dict[str, Any]) -> dict[str, Any] | None:
    """Base vs final at k samples per task (runs/sampled/vs-base.json): settings and one row per
    suite, then per level where the tasks' levels are known (clawloop.core.paired.by_level)."""
    got = data.get("sampled")
    if not got:
        return None
    rows = []
    for name, row in sorted((k, v) for k, v in got.items() if isinstance(v, dict)):
        rows.append({"what": name, **row})
        rows += [{"what": f"{name} {lv}", **r} for lv, r in sorted(row.get("levels", {}).items())]
    return {"k": got.get("k"), "temperature": got.get("temperature"), "rows": rows}


def summary(data: dict[str, Any]) -> dict[str, Any] | None:
    """The first screen: best iteration, gain over iteration 0, and whether the intervals separate."""
    held = data["heldout"]
    if not held:
        return None
    first = min(held)
    # Best by the gate's own measure; ties go to the earliest iteration (less training, same result).
    best = max(sorted(held), key=lambda i: held[i]["rate"])
    b, f = held[best], held[first]
    gain = b["rate"] - f["rate"]
    if best == first or gain <= 0:
        verdict = f"No iteration beat iteration {first} on the held-out suites"
    elif b["low"] > f["high"]:
        verdict = "The 95% intervals do not overlap: the gain is beyond sampling noise"
    else:
        verdict = "The 95% intervals overlap: the gain is not distinguishable from sampling noise yet"
    rows = []
    prev_t = None
    for i in sorted(held):
        m = data["metrics"][i]
        t = data["mtimes"].get(i)
        elapsed = t - prev_t if t is not None and prev_t is not None and t > prev_t else None
        prev_t = t if t is not None else prev_t
        worse_on = "; worse on " + ", ".join(m["gate_worse_suites"]) if m.get("gate_worse_suites") else ""
        gate = "start" if i == first else ("promoted" if m["promoted"] else f"rejected (kept iteration {m['policy_from']}{worse_on})")
        rows.append({"iteration": i, **held[i], "delta": held[i]["rate"] - f["rate"], "gate": gate,
                     "policy_from": m["policy_from"], "best": m["best_heldout_pass_rate"],
                     "format_errors": m.get("format_error_episodes", _suite_format_errors(data, i)),
                     "wall": data["wall"].get(i, {}), "elapsed": elapsed})
    last = max(held)
    return {"best": best, "first": first, "last": last, "gain": gain, "verdict": verdict, "best_figures": b,
            "first_figures": f, "last_figures": held[last], "rows": rows}


def _suite_format_errors(data: dict[str, Any], i: int) -> int | None:
    suites = data["metrics"][i].get("suites")
    return sum(s.get("format_error_episodes", 0) for s in suites.values() if s.get("heldout")) if suites else None


def chain(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Diagnosis of iteration N-1 beside what synthesis did in iteration N, per skill."""
    out = []
    for i in sorted(data["synthesis"]):
        syn = data["synthesis"][i]
        prev = max((j for j in data["diagnoses"] if j < i), default=None)
        rep = data["diagnoses"].get(prev, {}) if prev is not None else {}
        recs = {r["skill"]: r for r in rep.get("recommendations", [])}
        rates = _skill_rates(rep) if rep else {}
        modes = sorted((m for m in rep.get("failure_modes", []) if m["count"]),
                       key=lambda m: -m["count"])[:4]
        rows = []
        for skill in sorted(set(recs) | set(syn["skills"])):
            s = syn["skills"].get(skill, {})
            rows.append({"skill": skill, "rate": rates.get(skill), "rec": recs.get(skill),
                         "decision": s.get("decision"), "quotas": dict(sorted(s.get("quotas", {}).items())),
                         "knobs": s.get("knobs", [])})
        out.append({"iteration": i, "from": prev, "modes": modes, "rows": rows, "budgets": syn["budgets"],
                    "conditioned": syn["conditioned"], "tasks": syn["tasks"]})
    return out


def _step(before: dict[str, float], after: dict[str, float], suites: list[str]) -> dict[str, Any]:
    """One paired comparison, pooled over the held-out suites and per suite."""
    return {"all": paired.compare(before, after),
            "suites": {name: paired.compare(paired.by_suite(before, name), paired.by_suite(after, name))
                       for name in suites}}


def _ends(data: dict[str, Any], base: dict[str, float]) -> tuple[dict[str, paired.Comparison], dict[str, str]]:
    """Base -> final of each `at: ends` suite: iteration 0's verdicts against the final policy's from
    the stage evaluate-final (runs/ends/final/outcomes.json; none before it ran), and what the row
    pairs (the policy the gate kept, the last checkpoint or an earlier one: the policy's own figures)."""
    final = data.get("ends_final")
    if not final:
        return {}, {}
    rows, of = {}, {}
    for name in sorted(final["suites"]):
        rows[name] = paired.compare(paired.by_suite(base, name), paired.by_suite(final["verdicts"], name))
        of[name] = f"final policy (iteration {final['policy_from']}; stage evaluate-final)"
    return rows, of


def evidence(data: dict[str, Any]) -> dict[str, Any] | None:
    """Paired evidence from the iterations' heldout.json: the final policy against iteration 0
    (the loop's result), and each checkpoint against the one before (per-task flips). An `at: ends`
    suite has a base -> final row of its own (`_ends`) and stays out of the pooled "all", which
    every iteration measures alike (as the gate and the held-out pass@1 do)."""
    recs = data["records"]
    if not recs:
        return None
    iters = sorted(recs)
    first, last = iters[0], iters[-1]
    suites = sorted({paired.suite_of(k) for r in recs.values() for k in r["checkpoint"]})
    ends = data.get("ends", set())
    final = recs[last]["policy"]

    headline = _step(paired.without_suites(recs[last]["base"], ends), paired.without_suites(final, ends), [s for s in suites if s not in ends])
    end_rows, of = _ends(data, recs[last]["base"])
    headline["suites"] |= end_rows
    steps = [{"before": a, "after": b, **_step(recs[a]["checkpoint"], recs[b]["checkpoint"], suites)}
             for a, b in zip(iters, iters[1:], strict=False)]
    for st in steps:  # an `at: ends` suite between checkpoints (rolled out at iteration 0 only): no row
        st["suites"] = {name: c for name, c in st["suites"].items() if c.paired or name not in ends}
    c = headline["all"]
    if last == first or recs[last]["policy_from"] == first:
        words = (f"The policy after iteration {last} is still iteration {first}'s: no checkpoint was promoted "
                 f"over it" if last != first else f"Only iteration {first} has been evaluated")
    else:
        chance = ("a difference this large is unlikely to be chance (p < 0.05)" if c.p_two_sided < 0.05 else
                  "not distinguishable from chance at the 5% level")
        words = (f"Held-out, the final policy (iteration {recs[last]['policy_from']}) against iteration "
                 f"{first}: {c.words()}; {chance}. Pass@1 difference {c.diff:+.3f}, 95% paired-bootstrap "
                 f"interval [{c.diff_low:+.3f}, {c.diff_high:+.3f}]")
    known = recs[last].get("levels") or {}
    levels = {name: got for name in suites if (got := paired.by_level(recs[last]["base"], final, name, known))}
    return {"first": first, "last": last, "policy_from": recs[last]["policy_from"], "suites": suites,
            "headline": headline, "words": words, "steps": steps, "levels": levels, "ends": sorted(ends),
            "of": of}


def baselines(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per suite with published results (InterCode-Bash): each iteration's success beside the
    published runs on the same tasks."""
    out = []
    for name, by_iter in sorted(data["baselines"].items()):
        last = max(by_iter)
        rows = []
        for i, b in sorted(by_iter.items()):
            s = b["suite"]
            n = _graded(s)
            low, high = wilson_interval(s["passed"], n)
            rows.append({"iteration": i, "passed": s["passed"], "n": n, "rate": s["passed"] / n if n else 0.0,
                         "low": low, "high": high, "mean_reward": s.get("mean_reward")})
        published = []
        for model, f in sorted(by_iter[last]["published"].items(), key=lambda kv: -kv[1]["passed"] / kv[1]["tasks"]):
            low, high = wilson_interval(f["passed"], f["tasks"])
            published.append({"model": model, **f, "rate": f["passed"] / f["tasks"],
                              "low": low, "high": high})
        out.append({"suite": name, "rows": rows, "published": published})
    return out
