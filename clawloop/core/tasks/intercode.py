"""InterCode-Bash (princeton-nlp/intercode, the NL2Bash split) → Task records, and its grading.

Layout: an export of the benchmark's repository (`benchmarks/intercode/fetch.py OUT`):
`data/nl2bash/nl2bash_fs_N.json` (a JSON list of `{"query", "gold"}`; `gold` a command, or a
list of commands InterCode joins with ";") and `docker/bash_scripts/setup_nl2b_fs_N.sh`, the
script InterCode's Dockerfile copies to `/` and runs to build file system N. Nothing of the
benchmark is part of clawloop: the adapter reads the export given by path.

Mapping: each query is one task named `fsN-II` (II its index in the file): instruction = the
query; workdir `/` (where InterCode's agent starts); env `file_system_version` and `script` (the
Dockerfile's ENV); limits of the published runs (10 turns, 10 s per command); solution = the
gold command (the oracle); skill `intercode-fsN`.

**File systems, built once and cached by content hash.** The setup script runs once per content
(sha256 of the script and this builder's version) in an isolated sandbox; what it made (every
top-level entry outside InterCode's .gitignore and clawloop's own dirs, the script itself
included, as the image has it at `/`) is kept as a tar.gz in `$CLAWLOOP_INTERCODE_CACHE`
(default `~/.cache/clawloop/intercode`). Every sandbox of the task, the agent's and the gold
run's, extracts the same archive (a task file, removed after its setup extracts it), so both
start byte-identical — mtimes too, which `tar`/`ls -l`/`find -mtime` outputs and the archives the
gold commands create depend on (running the script in each sandbox would date every file
differently). Dates: the files the script made carry a fixed sentinel in the archive, and the
setup re-dates them to midnight UTC of the day before (as in an image built the day before the
run: `-mmin +5` holds, `-mtime +7` does not); dates the script set itself (`touch -t 2023...`)
stay. Task ids depend on the archive's bytes (archives the script builds embed their build
time), so they hold for one cache.

**Grading** (`verify_intercode`, the `intercode` format adapter), InterCode's `get_reward`:
1. the gold run: a second sandbox of the same backend and config, prepared from the same task
   (the pristine copy: no agent ever ran there), runs the gold command as the agent's commands
   run (cwd `/`, the task's env; under `ulimit -t`, as the oracle runs it: `gold_command`),
   then its file system is walked;
2. the agent's file system is walked in the agent's own world, as InterCode runs `git status` in
   the agent's container (there the walk sees `/tmp` and the regular files directly in `/`, which
   the verifier's clean world does not carry). Whatever an agent that programmed its world could
   make that walk report, it could have made real with its own commands: the walk reports only
   its own state and never sees the gold. If it gives no usable state, the walk is repeated on
   the sandbox's trusted root, which carries no regular file of `/`: those count as the setup
   left them (never better for the agent than leaving them alone);
3. the agent's last observation is the output of its last command ("Command timed out" when it
   timed out, as InterCode has it), taken from the host's record of the episode
   (`TaskEnvironment.steps`; the last tool turn of the transcript when there are
   no steps; the query, InterCode's first observation, when it ran nothing): the agent can make
   it whatever it can print, nothing more;
4. the host writes all three, with the baseline (the archive's contents), into the verifier's
   `/tests/run.json`, and the verifier (`intercode_reward.py`) computes the reward in the clean
   world like every clawloop verifier; reward.json carries the terms (the record's `scores`).
Passed iff reward >= 1 - 1e-9 (InterCode: reward == 1); the summary's mean_score is the mean
reward. Beside it, labelled strict and never the verdict: `strict_reward` (scores), the summary's
strict_mean_score and strict_full_score_rate, where new paths are compared by content (a
symlink's target, dot-less files and dirs, which InterCode's missing md5deep counts equal). The local backend is refused (the setup would extract into the host's `/`).
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clawloop.core.io import read_json
from clawloop.core.tasks import answer
from clawloop.core.tasks import intercode_reward as icr
from clawloop.core.tasks.intercode_fs import (  # noqa: F401 (CACHE_ENV, snapshot_key: the format's public names)
    CACHE_ENV,
    SENTINEL,
    SNAPSHOT,
    baseline_state,
    restore_command,
    snapshot,
    snapshot_key,
)
from clawloop.core.tasks.suite import Suite, SuiteItem
from clawloop.core.tasks.task import FileSpec, Limits, Provenance, Solution, Task, Verifier
from clawloop.core.tasks.verifier import Verdict, host_mounts, read_logs_file, run_verifier, verdict
from clawloop.errors import ClawloopError
from sandbox.base import SandboxError

KEY = "intercode"
"""`Task.metadata` key of the record (fs, index, name, commit, snapshot key, roots)."""
DATA_DIR = "data/nl2bash"
SCRIPTS_DIR = "docker/bash_scripts"
_QUERY_FILE = re.compile(r"nl2bash_fs_(\d+)\.json")
WORKDIR = "/"
MAX_TURNS = 10
"""The published multi-turn runs: 10 turns."""
COMMAND_TIMEOUT_S = 10.0
"""InterCode's TIMEOUT_DURATION for one action."""
GOLD_TIMEOUT_S = 120.0
GOLD_CPU_S = 30
"""CPU seconds of each process of the gold command (`ulimit -t`, a shell builtin: no process, no
variable), in the oracle's run and the gold run alike. InterCode ran the gold unbounded; here one
(fs1-55, a recursive grep of everything in /) reads /proc/*/pagemap without end, and this ends it at the same
point of its output in both runs instead of at a wall-clock timeout."""
TIMED_OUT = answer.TIMED_OUT
"""InterCode's observation of an action that timed out (BashEnv.exec_action)."""
STATE_MAX_BYTES = 256 << 20
WALK_TARGET = "/logs/clawloop-intercode"
WALK_TIMEOUT_S = 120.0
ENTRY = "test.sh"
STRICT_SCORES = ("strict_reward", "strict_file_changes", "strict_diff_same")
"""The strict score's terms in a record's scores (intercode_reward: content-compared)."""
REWARD_FILE = "intercode_reward.py"
TASK_FILE = "task.json"
RUN_FILE = "run.json"
ERROR_MARK = "clawloop-intercode:"
_REWARD_SRC = Path(icr.__file__).read_text(encoding="utf-8")
_EOF = "CLAWLOOP_INTERCODE_EOF"

# _TEST_SH and intercode_reward.py's text are part of every task's content id (the suite samples its
# 50 by id): their bytes stay as they were, stale path in the comment below included
# (tests/test_intercode.py pins the ids).
_TEST_SH = f"""#!/bin/bash
# clawloop: InterCode-Bash verifier. The intercode format adapter replays the gold command in a
# pristine sandbox and writes both runs' file systems and last observations to /tests/{RUN_FILE};
# this script only computes InterCode's reward from them (clawloop/tasks/intercode_reward.py).
if [ ! -f /tests/{RUN_FILE} ]; then
  echo "{ERROR_MARK} no /tests/{RUN_FILE}: this verifier runs under clawloop's intercode adapter"
  exit 1
fi
exec python3 -I -S /tests/{REWARD_FILE} reward /tests/{RUN_FILE} /logs/verifier/reward.json
"""


# ------------------------------------------------------------------------------ the export
def is_intercode_export(path: Path) -> bool:
    """An export's root: data/nl2bash/ holding nl2bash_fs_N.json files."""
    d = path / DATA_DIR
    return d.is_dir() and any(_QUERY_FILE.fullmatch(p.name) for p in d.iterdir())


def find_intercode_roots(root: str | Path) -> list[Path]:
    """`root` when it is an export, else its direct subdirectories that are (sorted)."""
    root = Path(root)
    if not root.is_dir():
        return []
    if is_intercode_export(root):
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
                  and is_intercode_export(p))


def query_files(root: Path) -> list[tuple[int, Path]]:
    """(N, data/nl2bash/nl2bash_fs_N.json), by N."""
    out = [(int(m.group(1)), p) for p in (root / DATA_DIR).iterdir() if (m := _QUERY_FILE.fullmatch(p.name))]
    return sorted(out)


def _pin(root: Path) -> dict[str, Any]:
    try:
        pin = json.loads((root / "PIN.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: pin[k] for k in ("repo", "commit") if isinstance(pin, dict) and isinstance(pin.get(k), str)}


def read_queries(path: Path) -> list[dict[str, str] | ClawloopError]:
    """The queries of one nl2bash_fs_N.json: {"query", "gold"} each, or the ClawloopError (naming
    the file, index and field) of a malformed record. A file that does not parse raises."""
    where = str(path)
    raw = read_json(path)
    if not isinstance(raw, list):
        raise ClawloopError(f"{where}: expected a JSON list of queries, got {type(raw).__name__}")
    out: list[dict[str, str] | ClawloopError] = []
    for i, rec in enumerate(raw):
        try:
            out.append(_record(rec, f"{where}: [{i}]"))
        except ClawloopError as e:
            out.append(e)
    return out


def _record(rec: Any, where: str) -> dict[str, str]:
    if not isinstance(rec, dict):
        raise ClawloopError(f"{where}: expected an object with query and gold")
    query = rec.get("query")
    if query is None:
        raise ClawloopError(f"{where}.query: missing")
    if not isinstance(query, str):
        raise ClawloopError(f"{where}.query: expected a string, got {type(query).__name__}")
    if not query.strip():
        raise ClawloopError(f"{where}.query: empty")
    gold = rec.get("gold")
    if gold is None:
        raise ClawloopError(f"{where}.gold: missing")
    if isinstance(gold, list) and gold and all(isinstance(g, str) for g in gold):
        gold = ";".join(gold)  # BashEnv.get_reward joins a list of gold commands so
    if not isinstance(gold, str):
        raise ClawloopError(f"{where}.gold: expected a command (a string or a list of strings)")
    if not gold.strip():
        raise ClawloopError(f"{where}.gold: empty")
    return {"query": query, "gold": gold}


# ------------------------------------------------------------------------------ loading
def _task(root: Path, fs: int, index: int, rec: dict[str, str], key: str | None, archive: bytes | None,
          roots: list[str], source: str, pin: dict[str, Any]) -> Task:
    name = f"fs{fs}-{index:02d}"
    spec = {"name": name, "fs": fs, "index": index, "query": rec["query"], "gold": rec["gold"]}
    files = {SNAPSHOT: FileSpec.of(archive)} if archive is not None and roots else {}
    script = f"setup_nl2b_fs_{fs}.sh"
    return Task(
        instruction=rec["query"], files=files, setup=[restore_command(roots if files else [])],
        workdir=WORKDIR, env={"file_system_version": str(fs), "script": script},
        verifier=Verifier(files={ENTRY: FileSpec.of(_TEST_SH, 0o755), REWARD_FILE: FileSpec.of(_REWARD_SRC),
                                 TASK_FILE: FileSpec.of(json.dumps(spec, ensure_ascii=False, indent=1))},
                          entry=ENTRY),
        solution=Solution(steps=[gold_command(rec["gold"])]), skill=f"intercode-fs{fs}", level=1,
        tags=("intercode", "nl2bash", f"fs{fs}"), source=source,
        limits=Limits(max_turns=MAX_TURNS, command_timeout_s=COMMAND_TIMEOUT_S),
        provenance=Provenance(routine="intercode"),
        metadata={KEY: {**spec, "snapshot": key, "roots": roots, **pin}},
    )


def load_items(root: str | Path, *, source: str | None = None,
               backend: str | None = None) -> list[SuiteItem]:
    """Every query of one export as a SuiteItem (a task, or its error naming file and field); a
    query file that does not parse, or whose setup script is missing or fails, is one item."""
    root = Path(root)
    source = source or root.resolve().name
    files = query_files(root)
    if not files:
        raise ClawloopError(f"{root}: no {DATA_DIR}/nl2bash_fs_N.json (not an InterCode-Bash export)")
    pin = _pin(root)
    items: list[SuiteItem] = []
    for fs, path in files:
        try:
            recs = read_queries(path)
            script_path = root / SCRIPTS_DIR / f"setup_nl2b_fs_{fs}.sh"
            try:
                script = script_path.read_bytes()
            except FileNotFoundError:
                raise ClawloopError(f"{script_path}: file not found (the setup script of {path.name})") from None
            key, archive, roots = snapshot(script, fs, backend=backend)
        except ClawloopError as e:
            items.append(SuiteItem(source, f"fs{fs}", None, str(e)))
            continue
        for i, rec in enumerate(recs):
            name = f"fs{fs}-{i:02d}"
            if isinstance(rec, ClawloopError):
                items.append(SuiteItem(source, name, None, str(rec)))
                continue
            items.append(SuiteItem(source, name, _task(root, fs, i, rec, key, archive, roots, source, pin)))
    return items


def load_intercode_suite(path: str | Path, *, name: str | None = None, backend: str | None = None) -> Suite:
    """A Suite of every export at `path` (lenient: bad queries are items with their error)."""
    path = Path(path)
    roots = find_intercode_roots(path)
    if not roots:
        raise ClawloopError(f"{path}: no InterCode-Bash export ({DATA_DIR}/nl2bash_fs_N.json)")
    suite = Suite(name or path.resolve().name, path)
    for r in roots:
        suite.items.extend(load_items(r, source=suite.name, backend=backend))
    return suite


def load_intercode(path: str | Path, *, source: str | None = None, backend: str | None = None) -> list[Task]:
    """Every task of one export; the first bad input raises its ClawloopError."""
    items = load_items(path, source=source, backend=backend)
    for item in items:
        if item.error is not None:
            raise ClawloopError(item.error)
    return [i.task for i in items if i.task is not None]


def is_intercode(task: Task) -> bool:
    return isinstance(task.metadata.get(KEY), dict) and TASK_FILE in task.verifier.files


def task_spec(task: Task) -> dict[str, Any]:
    """The verifier's task.json: name, fs, index, query, gold."""
    spec = json.loads(task.verifier.files[TASK_FILE].data())
    if not isinstance(spec, dict) or not isinstance(spec.get("gold"), str):
        raise ClawloopError(f"task {task.id}: {TASK_FILE} has no gold command")
    return spec


# ------------------------------------------------------------------------------ grading
_BACKGROUND = re.compile(r"(?<![&|>])&\s*$")


def gold_command(gold: str) -> str:
    """The gold command as the oracle and the gold run execute it: under GOLD_CPU_S, and, when
    it ends in `&`, followed by `wait` (the sandbox kills what a command left running when it
    exits: whether the background job got as far as creating its files would be a race)."""
    return f"ulimit -t {GOLD_CPU_S}\n{gold}" + ("\nwait" if _BACKGROUND.search(gold) else "")


observation = answer.observation
"""A command's observation as InterCode records it: its output, or "Command timed out"."""


def _prepare(sb: Any, task: Task) -> None:
    """Place the task's files and run its setup, as TaskEnvironment.prepare does (one exec)."""
    for path, spec in task.files.items():
        sb.write_file(path, spec.data(), spec.mode)
    wd = shlex.quote(task.workdir)
    lines = [] if task.workdir == sb.config.workspace else [f"mkdir -p {wd} || exit 97"]
    if task.setup:
        lines.append(f"cd {wd} || exit 97")
        lines += [f"(\n{cmd}\n) || exit 97" for cmd in task.setup]
    if lines:
        r = sb.exec("\n".join(lines), timeout=max(120.0, task.limits.command_timeout_s), cwd="/",
                    env=dict(task.env))
        if r.exit_code != 0:
            last = (r.output.strip().splitlines() or [""])[-1][:200]
            raise ClawloopError(f"the gold sandbox's setup failed (exit status {r.exit_code}) {last}".rstrip())


def _check_state(obj: Any) -> dict[str, list[Any]]:
    entries = obj.get("entries") if isinstance(obj, dict) else None
    if not isinstance(entries, dict):
        raise ClawloopError("the walk wrote no entries")
    for p, e in entries.items():
        if not isinstance(p, str) or not isinstance(e, list) or not e or e[0] not in ("f", "l", "d"):
            raise ClawloopError(f"the walk wrote a malformed entry ({str(p)[:80]!r})")
        if e[0] == "f" and not (len(e) == 3 and isinstance(e[1], str) and isinstance(e[2], bool)):
            raise ClawloopError(f"the walk wrote a malformed file entry ({p[:80]!r})")
        if e[0] == "l" and not (len(e) == 3 and isinstance(e[1], str) and isinstance(e[2], list)):
            raise ClawloopError(f"the walk wrote a malformed link entry ({p[:80]!r})")
    return entries


def walk_state(sb: Any, *, trusted: bool = False) -> dict[str, list[Any]]:
    """The sandbox's file system as InterCode's git view sees it (the walker of
    intercode_reward.py, run in the sandbox's own world, or on its trusted root)."""
    d = sb.scratch_dir("intercode-walk-")
    cmd = f"python3 -I -S - walk {WALK_TARGET}/state.json <<'{_EOF}'\n{_REWARD_SRC}\n{_EOF}\n"
    with sb.trusted_root() if trusted else contextlib.nullcontext(), host_mounts(sb, {WALK_TARGET: d}):
        r = sb.exec(cmd, timeout=WALK_TIMEOUT_S, cwd="/")
        raw = read_logs_file(d, "state.json", STATE_MAX_BYTES)
    if raw is None:
        last = (r.output.strip().splitlines() or [""])[-1][:200]
        raise ClawloopError(f"the walk wrote no state (exit status {r.exit_code}) {last}".rstrip())
    try:
        return _check_state(json.loads(raw))
    except ValueError as e:
        raise ClawloopError(f"the walk's state is not valid JSON ({e})") from None


def gold_run(sb: Any, task: Task, gold: str) -> dict[str, Any]:
    """The gold command in a fresh sandbox like `sb` (same backend and config), prepared from the
    task: its output and the file system it left."""
    g = type(sb)(sb.config)
    try:
        _prepare(g, task)
        r = g.exec(gold_command(gold), timeout=GOLD_TIMEOUT_S, cwd=task.workdir, env=dict(task.env) or None)
        state = walk_state(g)
    finally:
        g.close()
    return {"observation": observation(r), "exit_code": r.exit_code, "timed_out": r.timed_out, "state": state}


def last_observation(task: Task, messages: Sequence[dict[str, Any]] | None, steps: Sequence[tuple[str, Any]]) -> str:
    """What InterCode scores as the agent's answer: the output of its last command (the host's
    record; "Command timed out" when it timed out); with no steps, the last tool turn of the
    transcript (its exit-code line cut); with neither, the query (InterCode's observation
    before any action)."""
    return answer.last_output(messages, steps, default=task.instruction)


def verify_intercode(sb: Any, task: Task, messages: Sequence[dict[str, Any]] | None,
                     steps: Sequence[tuple[str, Any]]) -> Verdict:
    """InterCode's reward for the agent's sandbox `sb` (see the module doc)."""
    t0 = time.monotonic()
    if getattr(sb, "backend", None) == "local":
        return Verdict("error", None, "intercode: needs an isolated backend (bwrap or docker), not local", "")
    try:
        spec = task_spec(task)
        gold = gold_run(sb, task, spec["gold"])
    except (ClawloopError, SandboxError, OSError) as e:
        return Verdict("error", None, f"intercode: the gold run failed: {e}", "", time.monotonic() - t0)
    walked, note, baseline = "agent-world", "", baseline_state(task)
    try:
        agent_state = walk_state(sb)
    except (ClawloopError, SandboxError) as e:
        walked, note = "trusted-root", f"the agent-world walk failed ({e}); walked the trusted root\n"
        try:
            agent_state = walk_state(sb, trusted=True)
        except (ClawloopError, SandboxError) as e2:
            return Verdict("error", None, f"intercode: cannot walk the agent's file system: {e2}", note,
                           time.monotonic() - t0)
        # the trusted root carries no regular file of /: those count as the setup left them
        agent_state.update({p: e for p, e in baseline.items() if "/" not in p and e[0] == "f"})
    run = {"baseline": baseline,
           "agent": {"state": agent_state, "observation": last_observation(task, messages, steps)},
           "gold": {"state": gold["state"], "observation": gold["observation"]}}
    files = {**task.verifier.files, RUN_FILE: FileSpec.of(json.dumps(run, ensure_ascii=False))}
    graded = task.model_copy(update={"verifier": task.verifier.model_copy(update={"files": files})})
    with run_verifier(sb, graded) as vr:
        v = verdict(vr.logs, vr.result, task.limits.verifier_timeout_s, vr.duration_s)
        try:
            raw = read_logs_file(vr.logs, "reward.json", 1 << 20)
            terms = json.loads(raw) if raw else None
        except (SandboxError, ValueError):
            terms = None
    scores = {k: terms[k] for k in ("file_diff", "file_changes", "answer_similarity", "similarity",
                                    "diff_miss", "diff_extra", "diff_same", *STRICT_SCORES) if k in terms} \
        if isinstance(terms, dict) else {}
    scores.update(walk=walked, gold_exit_code=gold["exit_code"], gold_timed_out=gold["timed_out"])
    return Verdict(v.outcome, v.reward, v.reason, note + v.output, time.monotonic() - t0, scores)
