"""InterCode-Bash's reward, in the Python standard library alone (no clawloop, no sklearn).

One file, three uses: the host imports it (clawloop.tasks.intercode), every InterCode task's
verifier runs it as /tests/intercode_reward.py, and sandboxes run its walker as
`python3 -I -S - walk OUT` (the source piped in). It reproduces `BashEnv.get_reward` of
princeton-nlp/intercode (intercode/envs/bash/bash_env.py), which, after an episode, compares the
agent's container with a second one where the gold command ran:

    reward = 0.01
           + round(0.33 * (1 - erf(|missed| + |extra|)), 2)   # file_diff: `git status` entries
           + round(0.33 * same / common, 2)  (0.33 if none)    # file_changes: md5 of new paths
           + round(0.33 * tfidf(last observation, gold output), 2)   # answer_similarity

InterCode commits the image's `/` to git (its .gitignore leaves out the system dirs) and reads
`git status --short`. Here a walker lists the same view (files with md5 and the executable bit,
symlinks with their targets, dirs), and `git_status` writes what git would print for it, quoting
included (checked against git itself in tests/test_intercode.py). The rest follows InterCode to
its quirks: `parse_status` splits that text on whitespace into (path, code) pairs, so a quoted
path with a space breaks into two tokens that pair up wrongly (an odd count, where InterCode
raised IndexError, drops the last token here); only untracked ("??") paths common to both runs
are checked for content, with `md5sum PATH` when the path contains a "." and `md5deep -r PATH`
otherwise, which is missing from InterCode's image, so both runs print the same error and such
a path always counts as equal; the TF-IDF is sklearn's `TfidfVectorizer()` defaults (lowercase,
tokens `\\b\\w\\w+\\b`, smooth idf, l2 norm), its ValueError (no token in either text) falling
back to 1 for equal texts, else 0.

**Strict score** (`strict_reward`, never the verdict): the same formula with file_changes
comparing content, `strict_same`: every common untracked path's entries (a file's md5 and
executable bit, a symlink's target and what it resolves to, a new dir's whole subtree) must equal
the gold run's, dot or no dot. Faithfully, a symlink with a wrong target (no "." in its name)
scores full marks; strictly it does not. It sits beside InterCode's figure so that a held-out
number cannot rise on answers InterCode cannot tell apart.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import posixpath
import re
import shlex
import stat
import sys
from collections import Counter
from typing import Any

IGNORED = frozenset({"bin", "boot", "dev", "etc", "home", "lib", "media", "opt", "proc", "root", "run", "sbin",
                     "srv", "sys", "usr", "var", ".dockerenv"})
"""Names of InterCode's .gitignore (docker/docker.gitignore): patterns without a slash, so git
leaves them out at every depth, files and dirs alike."""
INFRA = frozenset({"logs", "tests", "solution", "lib32", "lib64", "libx32"})
"""Top-level entries of a clawloop sandbox that are not the task's: the verifier's and the
harness's mounts, and the system links (InterCode's lib64 link never changes)."""
MAX_ENTRIES = 200_000
"""Most entries one walk lists (beyond: `truncated`)."""
HASH_CAP = 512 << 20
"""Bytes of one file hashed at most (larger files hash their head, marked)."""

Entry = list  # ["f", md5, executable] | ["l", target, resolved] | ["d"]
State = dict  # path relative to / -> Entry


# --------------------------------------------------------------------------------- the walk
def _md5(path: str) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NOATIME", 0))
    except PermissionError:  # O_NOATIME needs the file's owner
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as e:
            return f"unreadable:{e.errno}"
    except OSError as e:
        return f"unreadable:{e.errno}"
    h, left = hashlib.md5(), HASH_CAP
    try:
        while left > 0:
            chunk = os.read(fd, min(1 << 20, left))
            if not chunk:
                return h.hexdigest()
            h.update(chunk)
            left -= len(chunk)
        return h.hexdigest() + "+capped"
    except OSError as e:
        return f"unreadable:{e.errno}"
    finally:
        os.close(fd)


def _resolved(path: str) -> list[str]:
    """What `md5sum` reads through a symlink: ["f", md5], ["d"] or ["missing"]."""
    try:
        st = os.stat(path)
    except OSError:
        return ["missing"]
    if stat.S_ISDIR(st.st_mode):
        return ["d"]
    if stat.S_ISREG(st.st_mode):
        return ["f", _md5(os.path.realpath(path))]
    return ["other"]


def _listdir(path: str) -> list[str]:
    """Names in a dir, read without touching its atime where the kernel allows."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags | getattr(os, "O_NOATIME", 0))
    except PermissionError:
        fd = os.open(path, flags)
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)


def walk(root: str = "/", max_entries: int = MAX_ENTRIES) -> dict[str, Any]:
    """The file system as InterCode's git repo at `/` sees it: {"entries": State, "truncated"}.
    Never follows a link; special files (FIFOs, sockets, devices) are left out, as git does."""
    entries: State = {}
    stack, truncated = [""], False
    while stack and not truncated:
        rel = stack.pop()
        try:
            names = sorted(_listdir(os.path.join(root, rel) if rel else root))
        except OSError:
            continue
        for name in names:
            if name in IGNORED or (not rel and name in INFRA):
                continue
            sub = f"{rel}/{name}" if rel else name
            full = os.path.join(root, sub)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                entries[sub] = ["d"]
                stack.append(sub)
            elif stat.S_ISREG(st.st_mode):
                entries[sub] = ["f", _md5(full), bool(st.st_mode & stat.S_IXUSR)]
            elif stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(full)
                except OSError:
                    target = ""
                entries[sub] = ["l", target, _resolved(full)]
            else:
                continue
            if len(entries) >= max_entries:
                truncated = True
                break
    return {"entries": entries, "truncated": truncated}


# ------------------------------------------------------------------------- git status --short
_C_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 34: '\\"', 92: "\\\\"}


def _bytes(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def quote_path(path: str) -> str:
    """How `git status --short` prints a path (core.quotePath on): C-quoted when it holds a
    space, a quote, a backslash, a control character or a non-ASCII byte (octal escapes)."""
    raw = _bytes(path)
    if not any(c <= 0x20 or c in (0x22, 0x5C) or c >= 0x7F for c in raw):
        return path
    out = ['"']
    for c in raw:
        if c in _C_ESCAPES:
            out.append(_C_ESCAPES[c])
        elif c < 0x20 or c >= 0x7F:
            out.append(f"\\{c:03o}")
        else:
            out.append(chr(c))
    return "".join(out) + '"'


def _files(state: State) -> State:
    return {p: e for p, e in state.items() if e[0] in ("f", "l")}


def git_status(baseline: State, current: State) -> str:
    """What `git status --short` prints for `current` when `baseline` was committed: changes to
    tracked paths (" D", " T", " M"; the executable bit counts, as git's file mode does) in path
    order, then untracked paths ("??"), a new dir holding no tracked path shown once as "dir/"
    (empty dirs never)."""
    base, cur = _files(baseline), _files(current)
    lines = []
    for p in sorted(base, key=_bytes):
        b, c = base[p], cur.get(p)
        if c is None:
            code = " D"
        elif c[0] != b[0]:
            code = " T"
        elif (c[0] == "f" and (c[1], c[2]) != (b[1], b[2])) or (c[0] == "l" and c[1] != b[1]):
            code = " M"
        else:
            continue
        lines.append(f"{code} {quote_path(p)}")
    tracked_dirs = {""}
    for p in base:
        parts = p.split("/")
        tracked_dirs.update("/".join(parts[:k]) for k in range(1, len(parts)))
    untracked = set()
    for p in cur.keys() - base.keys():
        parts = p.split("/")
        for k in range(1, len(parts)):
            d = "/".join(parts[:k])
            if d not in tracked_dirs:
                untracked.add(d + "/")
                break
        else:
            untracked.add(p)
    lines += [f"?? {quote_path(p)}" for p in sorted(untracked, key=_bytes)]
    return "".join(line + "\n" for line in lines)


def parse_status(status: str) -> list[tuple[str, str]]:
    """InterCode's BashEnv.parse_status: whitespace tokens paired as (path, code)."""
    tokens = status.split()
    return [(tokens[i + 1], tokens[i]) for i in range(0, len(tokens) - 1, 2)]


# ------------------------------------------------------------------------------ md5 check
def _md5sum_view(state: State, arg: str) -> tuple[str, ...]:
    """What `md5sum ARG` (run in / of that file system) prints, as a comparable value."""
    norm = posixpath.normpath(arg)
    e = state.get(norm if norm != "." else "")
    if e is None:
        return ("missing",)
    if e[0] == "l":
        e = e[2]
    if e[0] == "f" and arg.endswith("/"):
        return ("notdir",)
    return tuple(str(x) for x in e[:2])


def same_hash(path: str, agent: State, gold: State) -> bool:
    """InterCode's check of one common untracked path: `md5sum` output when the path holds a
    ".", else `md5deep -r` (not installed there: the same error in both containers)."""
    if "." not in path:
        return True
    try:
        args = shlex.split(f"md5sum {path}")[1:]
    except ValueError:  # InterCode's exec_run raised here; both sides alike
        return True
    return all(_md5sum_view(agent, a) == _md5sum_view(gold, a) for a in args)


_C_UNESCAPES = {v[1]: chr(k) for k, v in _C_ESCAPES.items()}


def unquote_path(token: str) -> str:
    """A path as `quote_path` printed it, read back (a token that is not C-quoted is itself)."""
    if len(token) < 2 or not (token.startswith('"') and token.endswith('"')):
        return token
    out, body, i = bytearray(), token[1:-1], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and re.match(r"[0-7]{3}", body[i + 1:i + 4]):
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
        elif c == "\\" and i + 1 < len(body) and body[i + 1] in _C_UNESCAPES:
            out += _C_UNESCAPES[body[i + 1]].encode()
            i += 2
        else:
            out += c.encode("utf-8", "surrogateescape")
            i += 1
    return out.decode("utf-8", "surrogateescape")


def _subtree(state: State, path: str) -> State:
    p = unquote_path(path).rstrip("/")
    return {k: e for k, e in state.items() if k == p or k.startswith(p + "/")}


def strict_same(path: str, agent: State, gold: State) -> bool:
    """The strict check of one common untracked path: its entries equal the gold run's (files by
    md5 and executable bit, symlinks by target and resolution, a new dir by all it holds)."""
    return _subtree(agent, path) == _subtree(gold, path)


# ---------------------------------------------------------------------------------- TF-IDF
_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def tfidf_similarity(a: Any, b: Any) -> float:
    """Cosine of sklearn's default TfidfVectorizer vectors of two texts, fitted on the pair."""
    try:
        if not isinstance(a, str) or not isinstance(b, str):
            raise ValueError("not a text")
        docs = [_TOKEN.findall(a.lower()), _TOKEN.findall(b.lower())]
        vocab = set(docs[0]) | set(docs[1])
        if not vocab:
            raise ValueError("empty vocabulary")
        idf = {t: math.log(3 / (1 + sum(t in set(d) for d in docs))) + 1.0 for t in vocab}
        vecs = []
        for d in docs:
            v = {t: n * idf[t] for t, n in Counter(d).items()}
            norm = math.sqrt(sum(x * x for x in v.values()))
            vecs.append({t: x / norm for t, x in v.items()} if norm > 0 else {})
        return sum(x * vecs[1].get(t, 0.0) for t, x in sorted(vecs[0].items()))
    except ValueError:
        return 1.0 if a == b else 0.0


# ---------------------------------------------------------------------------------- reward
def reward(baseline: State, agent: State, gold: State, agent_obs: Any, gold_obs: Any) -> dict[str, Any]:
    """InterCode's reward and its terms for the agent's file system and last observation
    against the gold run's."""
    diff_agent = parse_status(git_status(baseline, agent))
    diff_gold = parse_status(git_status(baseline, gold))
    miss = sorted(set(diff_gold) - set(diff_agent))
    extra = sorted(set(diff_agent) - set(diff_gold))
    total = 0.01
    p1 = round(0.33 * (1 - math.erf(len(miss) + len(extra))), 2)
    total += p1
    p2 = 0.33
    common = sorted(x for x in set(diff_agent) & set(diff_gold) if x[1] in ("A", "??", "C"))
    same = sum(1 for path, _ in common if same_hash(path, agent, gold))
    if common:
        p2 = round(0.33 * (same / len(common)), 2)
    total += p2
    sim = tfidf_similarity(agent_obs, gold_obs)
    p3 = round(0.33 * sim, 2)
    total += p3
    strict = sum(1 for path, _ in common if strict_same(path, agent, gold))
    p2_strict = round(0.33 * (strict / len(common)), 2) if common else 0.33
    return {"reward": total, "file_diff": p1, "file_changes": p2, "answer_similarity": p3,
            "similarity": round(sim, 6), "diff_miss": [list(x) for x in miss[:50]],
            "diff_extra": [list(x) for x in extra[:50]], "diff_same": {"correct": same, "total": len(common)},
            "strict_reward": 0.01 + p1 + p2_strict + p3, "strict_file_changes": p2_strict,
            "strict_diff_same": {"correct": strict, "total": len(common)}}


# ---------------------------------------------------------------------------------- main
def main(argv: list[str]) -> int:
    """`walk OUT`: this file system's state as JSON. `reward RUN OUT`: the reward of a run
    (JSON with baseline, agent {state, observation} and gold {state, observation}) as reward.json."""
    if len(argv) == 2 and argv[0] == "walk":
        with open(argv[1], "w", encoding="utf-8") as f:
            json.dump(walk("/"), f)
        return 0
    if len(argv) == 3 and argv[0] == "reward":
        with open(argv[1], encoding="utf-8") as f:
            run = json.load(f)
        out = reward(run["baseline"], run["agent"]["state"], run["gold"]["state"],
                     run["agent"]["observation"], run["gold"]["observation"])
        with open(argv[2], "w", encoding="utf-8") as f:
            json.dump(out, f)
        print(f"intercode reward {out['reward']:.2f}: file_diff {out['file_diff']}, file_changes "
              f"{out['file_changes']}, answer_similarity {out['answer_similarity']} "
              f"(missed {out['diff_miss']}, extra {out['diff_extra']}); strict (content-compared, "
              f"not InterCode's) {out['strict_reward']:.2f}, file_changes {out['strict_file_changes']}")
        return 0
    print("usage: intercode_reward.py walk OUT | reward RUN OUT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
