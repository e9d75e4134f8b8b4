"""Training data: the policy's own successful rollouts, reference trajectories, and their mix.

A conversation is the harness's whole episode in HF chat format (system, instruction, assistant
tool calls, tool results, submit). Self-generated ones come from rollout directories
(`episodes*.parquet`, see clawloop.core.trajectory); reference ones from `reference.py`. Both end up
in one `datasets.Dataset` of {"messages": [...], "tools": JSON} rows for SFTTrainer.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from clawloop.core.agent.harness import strip_submit_checks
from clawloop.core.agent.hints import strip_hint
from clawloop.core.agent.playbook import strip_playbook
from clawloop.errors import ClawloopError

if TYPE_CHECKING:
    import datasets

REQUIRED_COLUMNS = ("task_id", "passed", "messages")
"""Columns of episodes.parquet that training reads."""


@dataclass(frozen=True)
class Conversation:
    """One successful episode to imitate."""

    task_id: str
    messages: list[dict[str, Any]]
    source: str = "self"
    """"self" (the policy's rollout) or "reference" (the executed reference solution)."""
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> str:
        """sha256 of the canonical JSON of the messages: equal conversations share it."""
        return conversation_hash(self.messages)


def conversation_hash(messages: Sequence[dict[str, Any]]) -> str:
    return hashlib.sha256(orjson.dumps(list(messages), option=orjson.OPT_SORT_KEYS)).hexdigest()


def _episode_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(path.glob("episodes*.parquet")) or sorted(path.glob("**/episodes*.parquet"))
        if files:
            return files
        raise ClawloopError(f"{path}: no episodes*.parquet in this directory")
    raise ClawloopError(f"{path}: file not found")


def check_messages(messages: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise ClawloopError(f"{where}: messages: expected a non-empty JSON list of chat messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ClawloopError(f"{where}: messages[{i}]: expected an object with a 'role'")
    if not any(m["role"] == "assistant" for m in messages):
        raise ClawloopError(f"{where}: messages: no assistant turn")
    return messages


READ_ONLY = frozenset({
    "ls", "cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "find", "wc", "stat", "file", "diff", "cmp",
    "test", "[", "du", "df", "pwd", "tree", "less", "more", "sort", "uniq", "cut", "awk", "jq", "md5sum",
    "sha256sum", "sha1sum", "echo", "printf", "readlink", "realpath", "id", "whoami", "env", "printenv", "which",
    "type", "od", "xxd", "hexdump", "column", "nl", "tr", "basename", "dirname", "date", "true", "comm", "join",
    "paste", "tac", "rev", "fold", "expand", "seq", "getfacl", "lsattr", "namei", "ps", "pgrep", "tar", "unzip",
    "zcat", "gzip", "python3", "python", "sed", "git", "cd",
})
"""First words of commands that only look (with the exceptions `is_write` checks: an output
redirection, `sed -i`, `tar -x`/`-c`, a python program, a git subcommand that changes the tree)."""
_SEGMENTS = re.compile(r"\|\||&&|[|;\n]")
_REDIRECT = re.compile(r"(?<![0-9&<])>>?\s*(?!&|/dev/)\S")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_GIT_LOOKS = frozenset({"status", "log", "diff", "show", "branch", "ls-files", "rev-parse", "config", "blame"})
_PYTHON_WRITES = re.compile(r"open\(|\bos\.|shutil|subprocess|pathlib|Path\(|\.write")
"""What in a `python3 -c` program may change files: such a program counts as a write."""


def is_write(command: str) -> bool:
    """Whether a shell command may change the workspace (conservative: unknown commands write).

    Quoted text is data, not shell: `grep -E 'a|b'` and `echo "x > y"` only look. A program in
    quotes that can write by itself (awk's `print > "f"` or `system()`, python's `open(`) still
    counts as a write."""
    masked = _QUOTED.sub("''", command)
    if _REDIRECT.search(masked) or re.search(r"\btee\b", masked):
        return True
    for segment in _SEGMENTS.split(masked):
        words = segment.split()
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
        if not words:
            continue
        name = words[0].rsplit("/", 1)[-1]
        if name not in READ_ONLY:
            return True
        rest = words[1:]
        if name == "sed" and (any(w.startswith("-i") or w.startswith("--in-place") for w in rest)
                              or re.search(r"/w\s", command)):
            return True
        if name == "awk" and re.search(r"\bprintf?\b[^;}]*[>|]|\bsystem\s*\(", command):
            return True
        if name in ("tar", "unzip", "gzip") and not any(w in ("-t", "-l", "-tf", "-tzf", "-tvf", "--list")
                                                        for w in rest):
            return True
        if name in ("python3", "python") and not (rest[:1] == ["-c"] and not _PYTHON_WRITES.search(command)):
            return True
        if name == "git" and rest[:1] == ["-C"]:
            rest = rest[2:]
        if name == "git" and not (rest and rest[0] in _GIT_LOOKS):
            return True
        if name == "find" and any(w in ("-delete", "-exec", "-execdir", "-fprint", "-fprintf", "-fls")
                                  for w in rest):
            return True
    return False


def bash_commands(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The commands of the conversation's bash calls, in order."""
    out = []
    for m in messages:
        for call in m.get("tool_calls") or () if m.get("role") == "assistant" else ():
            fn = call.get("function") or {}
            args = fn.get("arguments")
            if fn.get("name") == "bash" and isinstance(args, dict) and isinstance(args.get("command"), str):
                out.append(args["command"])
    return out


def has_untrained_turn(messages: Sequence[dict[str, Any]]) -> bool:
    """Whether a conversation carries a turn marked `"train": false` (a reference's planned mistake)."""
    return any(m.get("train") is False for m in messages)


def masks_untrained_turns(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template keeps a turn marked `"train": false` out of the
    assistant mask (the templates under clawloop/bootstrap/templates do; a checkpoint made before
    them, or a foreign one, may not, and would train on the mistake)."""
    turn = {"role": "assistant", "content": "x", "train": False}
    try:
        out = tokenizer.apply_chat_template([{"role": "user", "content": "u"}, turn], tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
    except Exception:  # a template without generation markers cannot mask anything
        return False
    return not any(out["assistant_masks"])


def process_score(messages: Sequence[dict[str, Any]]) -> int:
    """How much of inspect -> act -> check -> submit an episode shows: one point for a look before its
    first change, one for a look after its last change (an episode that changes nothing scores its
    look, if any, once). The policy's own one-command passes score 0."""
    wrote = [is_write(c) for c in bash_commands(messages)]
    if True not in wrote:
        return int(bool(wrote))
    first, last = wrote.index(True), len(wrote) - 1 - wrote[::-1].index(True)
    return int(False in wrote[:first]) + int(False in wrote[last + 1:])


CUT_OFF = ("max_turns", "timeout", "format_errors")
"""Terminations of an episode the agent did not end itself. A passed one still teaches what cut it
off: Qwen2.5-Coder-0.5B passed tasks and then re-ran its last command until the turn limit."""


def load_self_trajectories(paths: Iterable[str | Path], max_per_task: int = 4, *, order: str = "shortest",
                           min_process: int = 0) -> list[Conversation]:
    """Successful rollouts (passed=true) that the agent ended itself (termination not in CUT_OFF;
    tables without the column are taken whole) from rollout dirs or episodes files: deduplicated
    by conversation hash, at most `max_per_task` per task, shortest conversations first (`order`
    "process": the highest `process_score` first, shortest among equals), none scoring below
    `min_process`; a playbook in the system turn is cut off (clawloop.core.agent.playbook.strip_playbook),
    and so is each checked submit with its note (clawloop.core.agent.harness.strip_submit_checks) and a
    hint ending the instruction (clawloop.core.agent.hints.strip_hint). Each conversation's meta carries
    its `process` score and whether a hint was cut (`hinted`)."""
    if order not in ("shortest", "process"):
        raise ClawloopError(f"data.self_order: {order!r} is not shortest or process")
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    by_task: dict[str, dict[str, Conversation]] = defaultdict(dict)
    for p in paths:
        for f in _episode_files(Path(p)):
            try:
                schema = pq.read_schema(f)
            except (pa.ArrowInvalid, OSError) as e:
                raise ClawloopError(f"{f}: not a Parquet file ({e})") from None
            missing = [c for c in REQUIRED_COLUMNS if c not in schema.names]
            if missing:
                raise ClawloopError(f"{f}: {missing[0]}: column missing (not an episodes table?)")
            for c, want in (("task_id", pa.string()), ("passed", pa.bool_()), ("messages", pa.string())):
                if schema.field(c).type != want:
                    raise ClawloopError(f"{f}: {c}: expected type {want}, got {schema.field(c).type}")
            ended = "termination" in schema.names
            table = pq.read_table(f, columns=[*REQUIRED_COLUMNS, *(["termination"] if ended else [])])
            passed = pc.fill_null(table.column("passed"), False)
            if ended:
                cut = pc.fill_null(pc.is_in(table.column("termination"), value_set=pa.array(CUT_OFF)), False)
                passed = pc.and_(passed, pc.invert(cut))
            rows = pc.indices_nonzero(passed).to_pylist()
            # filter, not take(rows): an empty Python list has no Arrow type to take with.
            for row, rec in zip(rows, table.filter(passed).to_pylist(), strict=True):
                where = f"{f}: row {row}"
                try:
                    messages = orjson.loads(rec["messages"] or "")
                except orjson.JSONDecodeError as e:
                    raise ClawloopError(f"{where}: messages: not valid JSON ({e})") from None
                # A rollout of a policy with a playbook: the weights learn the plain prompt.
                # ... and a checked submit's call and note go: it learns the fix, not the nudge.
                # ... and a rollout helped by a hint (clawloop.core.agent.hints) learns the plain instruction.
                plain = strip_submit_checks(strip_playbook(check_messages(messages, where)))
                kept = strip_hint(plain)
                conv = Conversation(rec["task_id"], kept, "self",
                                    {"process": process_score(kept), "hinted": kept is not plain})
                if conv.meta["process"] >= min_process:
                    by_task[conv.task_id].setdefault(conv.key, conv)
    out: list[Conversation] = []
    for task_id in sorted(by_task):
        convs = sorted(by_task[task_id].values(), key=lambda c: (
            -c.meta["process"] if order == "process" else 0, len(c.messages), c.key))
        out += convs[:max_per_task]
    return out


def dedupe(conversations: Iterable[Conversation]) -> list[Conversation]:
    """Drop repeated conversations (same messages), keeping the first."""
    seen: set[str] = set()
    out = []
    for c in conversations:
        if c.key not in seen:
            seen.add(c.key)
            out.append(c)
    return out


def takes_reference(self_fraction: float | None) -> bool:
    """Whether `mix` keeps any reference trajectory at this `self_fraction` (1.0: none, so the
    reference rollouts need not run)."""
    return self_fraction is None or self_fraction < 1.0


def mix(reference: Sequence[Conversation], self_generated: Sequence[Conversation],
        self_fraction: float | None, seed: int = 0) -> list[Conversation]:
    """Combine both sources. `self_fraction` None keeps everything; otherwise the largest subset
    whose share of self-generated conversations is `self_fraction` (nothing repeated)."""
    reference, self_generated = dedupe(reference), dedupe(self_generated)
    if self_fraction is None:
        return dedupe([*reference, *self_generated])
    rng = random.Random(seed)
    n_ref, n_self = len(reference), len(self_generated)
    if self_fraction <= 0.0:
        n_self = 0
    elif not takes_reference(self_fraction):
        n_ref = 0
    else:
        ratio = self_fraction / (1.0 - self_fraction)  # self per reference
        if n_self > ratio * n_ref:
            n_self = round(ratio * n_ref)
        else:
            n_ref = min(n_ref, round(n_self / ratio))
    picked = rng.sample(list(reference), n_ref) + rng.sample(list(self_generated), n_self)
    rng.shuffle(picked)
    return dedupe(picked)


def to_dataset(conversations: Sequence[Conversation], tools: Sequence[dict[str, Any]] | None = None,
               ) -> datasets.Dataset:
    """HF dataset of {"messages", "tools"} rows (tools as JSON, which SFTTrainer decodes)."""
    import datasets
    from datasets import Features, Json, List, Value

    if not conversations:
        raise ClawloopError("training set is empty: no reference trajectory passed and no successful rollout")
    if tools is None:
        from clawloop.core.agent.tool_calls import TOOLS

        tools = TOOLS
    tools_json = orjson.dumps(list(tools)).decode()
    # Messages as a list of Json values: Arrow's struct inference would unify the keys of all
    # messages (tool_calls: None everywhere, submit's {} arguments becoming {"command": None}).
    rows = {"messages": [_normalize(c.messages) for c in conversations],
            "tools": [tools_json] * len(conversations)}
    features = Features({"messages": List(Json()), "tools": Value("string")})
    return datasets.Dataset.from_dict(rows, features=features)


def _normalize(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool-call arguments as objects (templates `tojson` them), content never None."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("content") is None:
            m["content"] = ""
        if m.get("tool_calls"):
            calls = []
            for call in m["tool_calls"]:
                call = dict(call)
                fn = dict(call.get("function", {}))
                if isinstance(fn.get("arguments"), str):
                    with contextlib.suppress(orjson.JSONDecodeError):
                        fn["arguments"] = orjson.loads(fn["arguments"])
                call["function"] = fn
                call.setdefault("type", "function")
                calls.append(call)
            m["tool_calls"] = calls
        out.append(m)
    return out


def data_sha256(conversations: Sequence[Conversation]) -> str:
    """sha256 over the conversations in training order: what train_meta.json records."""
    h = hashlib.sha256()
    for c in conversations:
        h.update(bytes.fromhex(c.key))
    return h.hexdigest()
