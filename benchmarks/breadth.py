"""Command breadth: the programs and flags held-out suites use that a synthesized pool never asks for.

    .venv/bin/python benchmarks/breadth.py                      # InterCode-Bash, shell-core, a default pool
    .venv/bin/python benchmarks/breadth.py --pool pool.jsonl --intercode /tmp/intercode --json

Each command is split the way bash reads it (clawloop.core.tasks.shell_words for the top level,
bashlex for pipelines, `$(...)`, `<(...)` and loop bodies), including the commands that `xargs`,
`find -exec`, `bash -c`, `timeout` and the like run. A use is a program (`comm`), a construct
(`<for>`, `<while>`, `<if>`; `git commit` counts as a program) or a program and
one flag (`find -mtime`, `sort -k`, `chmod +x`, `date +FORMAT`); combined short flags count apart
(`du -sh` is `du -s` and `du -h`), an option's attached value is dropped (`-F:` is `-F`). Counts are
tasks, not occurrences: InterCode-Bash's gold commands (data/nl2bash/nl2bash_fs_N.json), shell-core's
solution/solve.sh and the pool's reference steps. A use is uncovered when a held-out suite has it and
the pool has not; they are ranked by how many held-out tasks use them.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from clawloop.core.tasks.shell_words import command_words, shell_segments

ROOT = Path(__file__).resolve().parents[1]
SHELL_CORE = ROOT / "benchmarks" / "shell-core"
INTERCODE = ROOT / "benchmarks" / "intercode" / "tasks"

LONG_SINGLE_DASH = {"find", "java", "gcc", "cc", "ffmpeg", "convert", "openssl", "tcpdump"}
"""Programs whose single-dash words are whole options (`find -name`), never letters combined."""
TAKES_VALUE = {
    "sort": "kotST", "cut": "dfcb", "awk": "Fvf", "gawk": "Fvf", "head": "nc", "tail": "nc",
    "grep": "efmABC", "egrep": "efmABC", "sed": "ef", "xargs": "IndPLsEa", "tr": "", "du": "d",
    "date": "dr", "split": "lbna", "tar": "fCT", "uniq": "fsw", "paste": "d", "join": "12jto",
    "nl": "bsvwi", "stat": "c", "ls": "wIT", "wc": "", "mkdir": "m", "install": "mogt", "touch": "dtr",
    "tee": "", "seq": "fs", "column": "ts", "printf": "v", "read": "dnNpt", "nice": "n", "timeout": "sk",
    "diff": "U", "ssh": "ipl", "git": "Cc", "bash": "c", "sh": "c", "fold": "w", "fmt": "w", "pr": "lw",
    "numfmt": "", "shuf": "ni", "zip": "", "chown": "", "chmod": "", "ln": "t", "cp": "tS", "mv": "tS",
    "rsync": "e", "truncate": "s", "dd": "", "od": "AjNtw", "hexdump": "enos", "base64": "w", "csplit": "fbn",
}
"""Per program, the short options that take a value (its letters after one of these are the value)."""
FIND_VALUE = {"-name", "-iname", "-path", "-ipath", "-wholename", "-regex", "-iregex", "-type", "-xtype", "-size",
              "-perm", "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin", "-newer", "-user", "-group",
              "-maxdepth", "-mindepth", "-printf", "-fprintf", "-samefile", "-links", "-inum", "-uid", "-gid",
              "-lname", "-ilname", "-used", "-fstype", "-fprint", "-regextype"}
"""find's predicates that take a value."""
WRAPPERS = {"xargs", "timeout", "nohup", "time", "env", "nice", "stdbuf", "command", "builtin", "sudo", "exec"}
"""Programs that run the command after their own options; that command counts too."""
KEYWORDS = {"do", "done", "then", "fi", "else", "elif", "for", "while", "until", "if", "case", "esac", "{", "}", "!"}
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OCTAL = re.compile(r"^[0-7]{3,4}$")
_SYMBOLIC = re.compile(r"^[ugoa]*[-+=][rwxXstugo]*(,[ugoa]*[-+=][rwxXstugo]*)*$")


def uses(script: str) -> set[str]:
    """Every program and program+flag use of a shell script (see the module doc)."""
    out: set[str] = set()
    whole = _parse(script)  # a loop over several lines is one command; else one segment at a time
    for words in (_commands(whole) if whole is not None else
                  (w for seg in shell_segments(script) for w in _segment_commands(seg.text))):
        out |= _word_uses(words)
    return out


def _parse(text: str) -> list[Any] | None:
    import bashlex

    try:
        return bashlex.parse(text)
    except Exception:  # bashlex raises bare errors (NotImplementedError, ParsingError) on rare syntax
        return None


def _segment_commands(text: str) -> Iterator[list[str]]:
    """The commands of one top-level segment; where bashlex cannot read it, its pipeline's parts
    one by one (shell_words.command_words), a loop's keywords left off."""
    if (trees := _parse(text)) is not None:
        yield from _commands(trees)
        return
    for part in re.split(r"\s\|\s", text):
        words = command_words(part)
        while words and words[0] in KEYWORDS:
            words = words[1:]
        if words:
            yield words


def _commands(trees: list[Any]) -> Iterator[list[str]]:
    """The words of every simple command of parsed trees: pipelines, groups, loops and substitutions."""
    stack: list[Any] = list(trees)
    while stack:
        node = stack.pop()
        if getattr(node, "kind", None) in ("for", "while", "until", "if", "case", "function"):
            yield [f"<{node.kind}>"]  # a shell construct counts as a use of its own
        if getattr(node, "kind", None) == "command":
            words = [p.word for p in node.parts if p.kind == "word"]
            if words:
                yield words
        for attr in ("parts", "list"):
            stack.extend(getattr(node, attr, None) or [])
        for attr in ("command", "output"):
            if (child := getattr(node, attr, None)) is not None and not isinstance(child, (str, int)):
                stack.append(child)


def _program(word: str) -> str:
    if "/" in word:
        base = posixpath.basename(word)
        return "(script)" if word.startswith((".", "~")) or base.endswith((".sh", ".py")) else base
    return word


def _word_uses(words: list[str]) -> set[str]:
    """The uses of one simple command's words, and of the commands it runs."""
    while words and (_ASSIGN.match(words[0]) or words[0] in KEYWORDS):
        words = words[1:]
    if not words or words[0].startswith(("$", "(", "{", "[")) or words[0] in ("[[", "]]"):
        return set()
    prog = _program(words[0])
    if prog == "git" and len(words) > 1 and not words[1].startswith("-"):
        prog, words = f"git {words[1]}", words[1:]  # git's subcommand is the program
    out, args = {prog}, words[1:]
    if prog in ("bash", "sh") and "-c" in args and args.index("-c") + 1 < len(args):
        return out | {f"{prog} -c"} | uses(args[args.index("-c") + 1])
    if prog == "find":
        return out | _find_uses(args)
    if prog in WRAPPERS:
        inner = _skip_options(prog, args)
        out |= {f"{prog} {f}" for f in _flags(prog, args[:len(args) - len(inner)])}
        return out | (_word_uses(inner) if inner else set())
    if prog == "tar" and args and re.fullmatch(r"[A-Za-z]+", args[0]):
        args = ["-" + args[0], *args[1:]]  # old style: tar czf
    out |= {f"{prog} {f}" for f in _flags(prog, args)}
    if prog == "chmod":
        mode = next((a for a in args if not a.startswith("-") or _SYMBOLIC.match(a)), "")
        if _OCTAL.match(mode):
            out.add("chmod OCTAL")
        elif mode in ("+x", "a+x"):
            out.add("chmod +x")
        elif _SYMBOLIC.match(mode):
            out.add("chmod SYMBOLIC")
    if prog == "date" and any(a.startswith("+") for a in args):
        out.add("date +FORMAT")
    return out


def _skip_options(prog: str, args: list[str]) -> list[str]:
    """What a wrapper runs: its arguments after its own options (and their values)."""
    i = 0
    if prog == "timeout":
        while i < len(args) and args[i].startswith("-"):
            i += 1
        return args[i + 1:]  # the duration
    if prog == "env":
        while i < len(args) and (args[i].startswith("-") or _ASSIGN.match(args[i])):
            i += 1
        return args[i:]
    takes = TAKES_VALUE.get(prog, "")
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        flag = args[i]
        i += 1
        if len(flag) == 2 and flag[1] in takes and not flag.startswith("--"):
            i += 1  # -I {}: the value is the next word
    return args[i:]


def _find_uses(args: list[str]) -> set[str]:
    out: set[str] = set()
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "\\;", "+")), len(args))
            out |= {f"find {a}"} | _word_uses(args[i + 1:end])
            i = end + 1
            continue
        if a.startswith("-") and len(a) > 1 and not a[1:].isdigit():
            out.add(f"find {a}")
            i += 1 if a in FIND_VALUE else 0  # its value (`-size -32000c`, `-perm -o=w`) is no predicate
        i += 1
    return out


def _flags(prog: str, args: list[str]) -> Iterator[str]:
    """The flags of `args`: long options whole (without `=value`), short ones letter by letter."""
    takes = TAKES_VALUE.get(prog, "")
    for a in args:
        if a == "--":
            return
        if a.startswith("--") and len(a) > 2:
            yield a.split("=", 1)[0]
        elif a.startswith("-") and len(a) > 1:
            if a[1:].isdigit():
                yield "-n" if prog in ("head", "tail") else a
                continue
            if prog in LONG_SINGLE_DASH:
                yield a
                continue
            for c in a[1:]:
                if not c.isalnum():
                    break
                yield f"-{c}"
                if c in takes:
                    break


# ------------------------------------------------------------------------------ the sources
def intercode_scripts(root: Path) -> dict[str, str]:
    """name -> gold command of every query of an InterCode-Bash export (data/nl2bash/nl2bash_fs_N.json)."""
    out: dict[str, str] = {}
    for path in sorted((root / "data" / "nl2bash").glob("nl2bash_fs_*.json")):
        fs = path.stem.rsplit("_", 1)[1]
        for i, q in enumerate(json.loads(path.read_text("utf-8"))):
            gold = q["gold"]
            out[f"fs{fs}-{i}"] = gold if isinstance(gold, str) else "\n".join(gold)
    return out


def harbor_scripts(root: Path) -> dict[str, str]:
    """name -> solution/solve.sh of every Harbor task directory under `root`."""
    return {p.parent.parent.name: p.read_text("utf-8") for p in sorted(root.glob("*/solution/solve.sh"))}


def pool_scripts(tasks: Iterable[Any]) -> dict[str, str]:
    """task id -> its reference steps, one a line."""
    return {t.id: "\n".join(t.solution.steps) for t in tasks if t.solution is not None}


def default_pool(iteration: int = 1, breadth: float | None = None) -> list[Any]:
    """The pool the synthesize stage makes at `iteration` from the schema's defaults (params.yaml's;
    `breadth` overrides synthesis.breadth) before any report: procedural only, so no policy is loaded."""
    from clawloop.config.synthesis import SynthesisParams
    from clawloop.phases.synthesize.pool import build_pool

    def no_policy(routine: str) -> Any:
        raise RuntimeError(f"{routine} needs a policy")

    params = SynthesisParams() if breadth is None else SynthesisParams(breadth=breadth)
    return build_pool(params, iteration, None, None, no_policy).tasks


# ------------------------------------------------------------------------------ the table
def count(scripts: dict[str, str]) -> Counter[str]:
    """Use -> how many of the scripts use it."""
    return Counter(u for s in scripts.values() for u in uses(s))


def coverage(suites: dict[str, dict[str, str]], pool: dict[str, str]) -> dict[str, Any]:
    """The table (use -> count per suite and in the pool), the uncovered uses ranked by held-out
    tasks, and per suite: distinct uses covered, task-weighted uses covered, tasks fully covered."""
    counts = {name: count(s) for name, s in suites.items()}
    have = count(pool)
    held = Counter[str]()
    for c in counts.values():
        held.update(c)
    table = [{"use": u, **{n: counts[n][u] for n in suites}, "pool": have[u]}
             for u in sorted(held, key=lambda u: (-held[u], u))]
    summary = {}
    for name, scripts in suites.items():
        c = counts[name]
        per_task = [uses(s) for s in scripts.values()]
        summary[name] = {
            "tasks": len(scripts), "uses": len(c), "uses_covered": sum(1 for u in c if have[u]),
            "weighted": sum(c.values()), "weighted_covered": sum(n for u, n in c.items() if have[u]),
            "tasks_covered": sum(1 for us in per_task if all(have[u] for u in us)),
        }
    uncovered = [row for row in table if not row["pool"]]
    return {"pool_tasks": len(pool), "pool_uses": len(have), "summary": summary, "table": table,
            "uncovered": uncovered}


def render(result: dict[str, Any], top: int = 40) -> str:
    """The summary and the top uncovered uses as markdown."""
    names = list(result["summary"])
    lines = [f"pool: {result['pool_tasks']} tasks, {result['pool_uses']} distinct uses", "",
             "| suite | tasks | uses covered | task-weighted uses covered | tasks fully covered |",
             "|---|---|---|---|---|"]
    for n, s in result["summary"].items():
        lines.append(f"| {n} | {s['tasks']} | {s['uses_covered']} / {s['uses']} | "
                     f"{s['weighted_covered']} / {s['weighted']} | {s['tasks_covered']} |")
    lines += ["", f"uncovered, by held-out tasks ({len(result['uncovered'])}; top {top}):", "",
              "| use | " + " | ".join(names) + " | pool |", "|---|" + "---|" * (len(names) + 1)]
    for row in result["uncovered"][:top]:
        lines.append(f"| `{row['use']}` | " + " | ".join(str(row[n]) for n in names) + f" | {row['pool']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--intercode", type=Path, default=INTERCODE, help="an InterCode-Bash export")
    ap.add_argument("--shell-core", type=Path, default=SHELL_CORE)
    ap.add_argument("--pool", type=Path, help="a pool.jsonl (default: synthesize the stage's default pool)")
    ap.add_argument("--breadth", type=float, help="synthesis.breadth of the synthesized pool (default: the schema's)")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--json", action="store_true", help="the whole result as JSON")
    args = ap.parse_args(argv)
    suites = {}
    if (args.intercode / "data" / "nl2bash").is_dir():
        suites["intercode"] = intercode_scripts(args.intercode)
    else:
        print(f"[breadth] no InterCode-Bash export at {args.intercode}: left out", file=sys.stderr)
    suites["shell-core"] = harbor_scripts(args.shell_core)
    if args.pool:
        from clawloop.core.tasks.pool import read_pool

        tasks = read_pool(args.pool)
    else:
        tasks = default_pool(breadth=args.breadth)
    result = coverage(suites, pool_scripts(tasks))
    print(json.dumps(result, indent=1) if args.json else render(result, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
