"""Offline text for training the bootstrap tokenizer: shell help, instructions, commands, chats.

Everything here is deterministic given a seed and uses only files shipped in the repository
(`data/shell_help.txt`, the synthesis word lists), so the tokenizer is the same on every machine.
It does not read the harness's prompts, so editing a prompt does not change the tokenizer.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from clawloop.phases.synthesize import words as word_lists

DATA = Path(__file__).parent / "data"

HELP_TOOLS = ["ls", "cat", "head", "tail", "grep", "sed", "find", "sort", "uniq", "wc", "cut", "tr", "xargs", "tar", "gzip", "zip", "unzip", "chmod", "chown", "cp", "mv", "rm", "mkdir", "rmdir", "touch", "ln", "du", "df", "diff", "patch", "printf", "tee", "date", "stat", "file", "basename", "dirname", "realpath", "readlink", "seq", "paste", "join", "comm", "split", "md5sum", "sha256sum", "base64", "git", "python3", "jq", "env", "nl", "od", "tac", "column", "iconv", "fold", "expand", "fmt", "shuf", "timeout"]

_EXTS = ("txt", "csv", "json", "log", "md", "py", "sh", "conf", "yaml", "tsv", "ini", "xml", "dat", "bak")
_DIRS = ("data", "logs", "src", "backup", "archive", "reports", "tmp", "out", "config", "docs", "build")
_FALLBACK_WORDS = ["amber", "ledger", "harbor", "notes", "summit", "river", "report", "sales", "inventory", "orders", "metrics", "cache", "index", "draft", "alpha", "beta", "gamma", "delta", "falcon", "maple", "cedar", "quartz", "violet", "copper", "silver", "garden", "rocket"]

# (instruction, command) templates; {f} {g} files, {d} dir, {w} {v} words, {n} number, {e} extension.
PAIRS = (
    ("Create an empty file named {f}.", "touch {f}"),
    ("Show the first {n} lines of {f}.", "head -n {n} {f}"),
    ("Print the last {n} lines of {f}.", "tail -n {n} {f}"),
    ("Count the lines in {f} and write the number to {g}.", "wc -l < {f} > {g}"),
    ("Copy {f} into the directory {d}.", "cp {f} {d}/"),
    ("Move {f} to {d}/{g}.", "mv {f} {d}/{g}"),
    ("Rename {f} to {g}.", "mv {f} {g}"),
    ("Delete the file {f}.", "rm {f}"),
    ("Make {f} executable.", "chmod +x {f}"),
    ("Find every .{e} file under {d} and list their paths in {g}.", "find {d} -name '*.{e}' > {g}"),
    ("Write the lines of {f} that contain \"{w}\" to {g}.", "grep '{w}' {f} > {g}"),
    ("Sort the lines of {f} and save the result as {g}.", "sort {f} > {g}"),
    ("Remove duplicate lines from {f} and save them to {g}.", "sort -u {f} > {g}"),
    ("Create the directory {d}.", "mkdir -p {d}"),
    ("Pack the directory {d} into {g}.tar.gz.", "tar czf {g}.tar.gz {d}"),
    ("Extract the archive {f} into {d}.", "mkdir -p {d} && tar xzf {f} -C {d}"),
    ("Replace every \"{w}\" with \"{v}\" in {f}.", "sed -i 's/{w}/{v}/g' {f}"),
    ("Write the text {w} into a new file {f}.", "echo '{w}' > {f}"),
    ("Append the line {w} to {f}.", "echo '{w}' >> {f}"),
    ("How many files are in {d}? Write the count to {g}.", "ls {d} | wc -l > {g}"),
    ("Print the second column of the CSV file {f}.", "cut -d, -f2 {f}"),
    ("Save the size of {f} in bytes to {g}.", "stat -c %s {f} > {g}"),
    ("Write the sha256 checksum of {f} to {g}.", "sha256sum {f} > {g}"),
    ("Show the differences between {f} and {g}.", "diff {f} {g}"),
    ("Concatenate {f} and {g} into {d}/all.{e}.", "cat {f} {g} > {d}/all.{e}"),
)


def quote(name: str) -> str:
    """Shell-quote a name only when it needs it."""
    if all(c.isalnum() or c in "._-/+@%" for c in name) and not name.startswith("-"):
        return name
    return "'" + name.replace("'", "'\\''") + "'"


_CONS, _VOWS = "bcdfghjklmnprstvwz", "aeiou"


def random_word(rng: random.Random, lo: int = 3, hi: int = 9) -> str:
    """A random letter string: syllables (pronounceable) or uniform letters."""
    n = rng.randint(lo, hi)
    if rng.random() < 0.5:
        return "".join(rng.choice(_CONS if i % 2 == 0 else _VOWS) for i in range(n))
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))


def _word_source():
    try:
        word_lists.words("nouns")
        return word_lists
    except Exception:  # the synthesis word lists are optional
        return None


def name_stem(rng: random.Random, awkward: float = 0.15) -> str:
    """A file stem as the synthesis generators draw them (or from a small fallback list)."""
    w = _word_source()
    if w is not None:
        return w.awkward_stem(rng) if rng.random() < awkward else w.plain_stem(rng)
    a, b = rng.choice(_FALLBACK_WORDS), rng.choice(_FALLBACK_WORDS)
    return rng.choice((f"{a}_{b}", f"{a}-{b}", f"{a}{rng.randrange(2, 99)}", a))


def word(rng: random.Random) -> str:
    w = _word_source()
    if w is not None:
        return w.pick(rng, rng.choice(("nouns", "adjectives", "fruits", "cities")))
    return rng.choice(_FALLBACK_WORDS)


@dataclass(frozen=True)
class Pair:
    """An instruction, the command that solves it, and the names the command must copy."""

    instruction: str
    command: str
    names: tuple[str, ...]


def pair(rng: random.Random) -> Pair:
    """One synthetic (instruction, command) pair."""
    instr, cmd = rng.choice(PAIRS)
    e = rng.choice(_EXTS)
    f = f"{name_stem(rng)}.{rng.choice(_EXTS)}"
    g = f"{name_stem(rng, 0.05)}.{rng.choice(_EXTS)}"
    d = rng.choice((rng.choice(_DIRS), name_stem(rng, 0.0)))
    if rng.random() < 0.3:
        f = f"{rng.choice(_DIRS)}/{f}"
    vals = {"f": f, "g": g, "d": d, "w": word(rng), "v": word(rng), "n": str(rng.randrange(1, 40)), "e": e}
    qvals = {k: quote(v) if k in "fgd" else v for k, v in vals.items()}
    if ".tar.gz" in cmd:
        vals["g"] = qvals["g"] = name_stem(rng, 0.0)
    command = cmd.format(**qvals)
    names = tuple(vals[k] for k in "fgd" if "{" + k + "}" in instr and vals[k] in command)
    return Pair(instr.format(**vals), command, names)


def tool_call(command: str | None) -> str:
    """The assistant text of a call as the chat template renders it."""
    if command is None:
        return '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'
    args = json.dumps({"command": command}, ensure_ascii=False)
    return f'<tool_call>\n{{"name": "bash", "arguments": {args}}}\n</tool_call>'


def chat_snippets(rng: random.Random, n: int) -> Iterator[str]:
    """Short conversations in the chat format: instruction, call, observation, submit."""
    yield ("# Tools\n- bash(command): Run a shell command; returns its output and exit code.\n"
           "- submit(): Finish the episode once the task is done.\nCall a tool with:\n<tool_call>\n"
           '{"name": <tool-name>, "arguments": <args-json-object>}\n</tool_call>')
    for _ in range(n):
        p = pair(rng)
        obs = f"{rng.choice(('', word(rng) + chr(10), 'No such file or directory' + chr(10)))}[exit code {rng.choice((0, 0, 0, 1, 2))}]"
        yield (f"<|im_start|>user\n{p.instruction}<|im_end|>\n<|im_start|>assistant\n{tool_call(p.command)}"
               f"<|im_end|>\n<|im_start|>user\n<tool_response>\n{obs}\n</tool_response><|im_end|>\n"
               f"<|im_start|>assistant\n{tool_call(None)}<|im_end|>")


def help_text() -> str:
    """The shipped `--help` corpus."""
    return (DATA / "shell_help.txt").read_text(encoding="utf-8")


def collect_help_corpus(out: Path = DATA / "shell_help.txt", tools: tuple[str, ...] = tuple(HELP_TOOLS)) -> int:
    """Regenerate data/shell_help.txt from this machine's tools (run by hand, not by the bootstrap)."""
    parts = ["# --help output of common tools (generated once by clawloop.bootstrap.corpus.collect_help_corpus;"
             " shipped so the tokenizer is the same on every machine)"]
    for t in tools:
        try:
            r = subprocess.run([t, "--help"], capture_output=True, text=True, timeout=10,
                               env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired):
            continue
        parts.append(f"$ {t} --help\n{(r.stdout + r.stderr)[:6000]}")
    text = "\n".join(parts) + "\n"
    out.write_text(text, encoding="utf-8")
    return len(text)


def corpus(seed: int, n_pairs: int = 20_000, n_chats: int = 4_000) -> Iterator[str]:
    """The tokenizer training text, one document per item."""
    rng = random.Random(seed)
    yield from help_text().split("\n$ ")
    for _ in range(n_pairs):
        p = pair(rng)
        yield p.instruction
        yield p.command
    yield from chat_snippets(rng, n_chats)
