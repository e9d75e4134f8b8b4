"""text_search: find lines and files by content with grep."""

from __future__ import annotations

import random
import re

from clawloop.phases.synthesize import content, words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "text_search"
VERSION = 1
LEVELS = {
    1: "one grep: count the lines with a word, or copy the matching lines out",
    2: "one grep with an option: ignore case, invert, whole words, line numbers",
    3: "several files in a folder with distractor files and near-miss tokens; awkward names likely",
    4: "extract with a regular expression and deduplicate (with sort_count); look first",
    5: "recursive search over a source tree, only some file types, skipping a vendored folder",
}


def _pick_token(rng: random.Random, lines: list[str]) -> str:
    """A service name or log level that some but not all lines contain."""
    candidates = sorted({ln.split()[2] for ln in lines} | {ln.split()[3].rstrip(":") for ln in lines})
    rng.shuffle(candidates)
    for tok in candidates:
        hits = sum(tok in ln for ln in lines)
        if 0 < hits < len(lines):
            return tok
    return lines[0].split()[3].rstrip(":")


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    lines = content.log_lines(rng, rng.randrange(6, 16))
    log = b.file(b.name("log", awkward=b.awkward()), lines_text(lines))
    tok = _pick_token(rng, lines)
    hits = [ln for ln in lines if tok in ln]
    if rng.random() < 0.5:
        out = b.output(b.name("txt", stem=f"{tok.lower()}_count"))
        b.say("count", word=tok, f=show(log), out=show(out))
        b.step(f"grep -c {tok} {q(log)} > {q(out)}")
        b.primary(out, str(len(hits)), "strip")
    else:
        out = b.output(b.name("txt", stem=f"{tok.lower()}_lines"))
        b.say("extract", word=tok, f=show(log), out=show(out))
        b.step(f"grep {tok} {q(log)} > {q(out)}")
        b.primary(out, lines_text(hits), "text")
    b.unchanged(log)


def _wordish(tok: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(tok)}(?![A-Za-z0-9_])")


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    intent = rng.choice(["ignore_case", "invert", "whole_word", "line_numbers"])
    word = words.pick(rng, "nouns")
    n = rng.randrange(8, 18)
    lines = [words.sentence(rng) for _ in range(n)]
    # plant the word, in mixed case / glued to other text, on some lines
    for i in rng.sample(range(n), rng.randrange(2, max(3, n // 2))):
        form = rng.choice([word, word.upper(), word.capitalize(), f"{word}s", f"{word}_{words.pick(rng, 'nouns')}"])
        parts = lines[i].split()
        parts.insert(rng.randrange(len(parts) + 1), form)
        lines[i] = " ".join(parts)
    if not any(_wordish(word).search(ln) for ln in lines):
        lines[0] = f"{lines[0]} {word}"
    if all(word in ln.lower() for ln in lines):
        lines.append(words.sentence(rng))
    f = b.file(b.name("txt", awkward=b.awkward(2, 0.3)), lines_text(lines))
    if intent == "ignore_case":
        hits = [ln for ln in lines if word in ln.lower()]
        out = b.output(b.name("txt"))
        b.say("ignore_case", word=word, upper=word.upper(), f=show(f), out=show(out))
        b.step(f"grep -ci {word} {q(f)} > {q(out)}")
        b.primary(out, str(len(hits)), "strip")
    elif intent == "invert":
        keep = [ln for ln in lines if word not in ln]
        out = b.output(b.name("txt"))
        b.say("invert", word=word, f=show(f), out=show(out))
        b.step(f"grep -v {word} {q(f)} > {q(out)}")
        b.primary(out, lines_text(keep), "text")
    elif intent == "whole_word":
        hits = [ln for ln in lines if _wordish(word).search(ln)]
        out = b.output(b.name("txt"))
        b.say("whole_word", word=word, f=show(f), out=show(out))
        b.step(f"grep -cw {word} {q(f)} > {q(out)}")
        b.primary(out, str(len(hits)), "strip")
    else:
        nums = [str(i + 1) for i, ln in enumerate(lines) if word in ln]
        if not nums:
            lines[-1] += f" {word}"
            b.file(f, lines_text(lines))
            nums = [str(len(lines))]
        out = b.output(b.name("txt"))
        b.say("line_numbers", word=word, f=show(f), out=show(out))
        b.step(f"grep -n {word} {q(f)} | cut -d: -f1 > {q(out)}")
        b.primary(out, lines_text(nums), "text")
    b.unchanged(f)


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    d = b.dirname(awkward=b.awkward(p=0.3))
    code = f"{rng.choice(['E', 'ERR', 'CODE', 'X'])}{rng.randrange(100, 999)}"
    files: dict[str, list[str]] = {}
    for i in range(rng.randrange(4, 7) + b.knobs.distractors):
        lines = content.log_lines(rng, rng.randrange(4, 9))
        roll = i % 3
        if roll == 0:  # a real hit
            lines[rng.randrange(len(lines))] += f" ({code})"
        elif roll == 1:  # near miss: a longer code that contains ours only as a prefix-free variant
            lines[0] += f" ({code[:-1]}{(int(code[-1]) + 1) % 10})"
        files[b.name("log", awkward=b.awkward(p=0.4), folder=d)] = lines
    for rel, lines in files.items():
        b.file(rel, lines_text(lines))
    # a distractor outside the folder that also mentions the code
    b.file(b.name("log"), lines_text([content.log_line(rng, 1) + f" ({code})"]))
    hits = sorted(rel for rel, lines in files.items() if any(code in ln for ln in lines))
    if rng.random() < 0.5:
        out = b.output(b.name("txt", stem=f"files_with_{code.lower()}"))
        b.say("files_with", code=code, d=show(d), out=show(out))
        b.step(f"grep -l {code} {q(d)}/* | sort > {q(out)}")
        b.primary(out, lines_text(hits), "text")
    else:
        total = sum(code in ln for lines in files.values() for ln in lines)
        out = b.output(b.name("txt"))
        b.say("count_all", code=code, d=show(d), out=show(out))
        b.step(f"ls {q(d)}")
        b.step(f"cat {q(d)}/*.log | grep -c {code} > {q(out)}")
        b.primary(out, str(total), "strip")


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    addrs = [content.ip(rng) for _ in range(rng.randrange(3, 7))]
    status = rng.choice([404, 500, 403])
    lines = []
    for _ in range(rng.randrange(20, 40)):
        lines.append(content.access_line(rng, rng.choice(addrs), rng.choice([200, 200, 301, status])))
    bad = sorted({ln.split()[0] for ln in lines if f'" {status} ' in ln})
    if not bad:
        lines.append(content.access_line(rng, addrs[0], status))
        bad = [addrs[0]]
    log = b.file(b.name("log", stem=rng.choice(["access", "web", "nginx_access", "http"]) + f"_{rng.randrange(10, 99)}"),
                 lines_text(lines))
    out = b.output(b.name("txt", awkward=b.awkward(p=0.3)))
    b.say("ips_with_status", status=status, f=show(log), out=show(out))
    b.step(f"head -n 3 {q(log)}")
    b.step(f"grep '\" {status} ' {q(log)} | cut -d' ' -f1 | sort -u > {q(out)}")
    b.primary(out, lines_text(sorted(set(bad))), "text")


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    src = b.reserve(rng.choice(["src", "app", "lib", "project"]))
    vendor = rng.choice(["vendor", "third_party", "external"])
    marker = rng.choice(["TODO", "FIXME", "XXX", "HACK"])
    hits: list[str] = []
    subdirs = ["", *rng.sample(["core", "utils", "api", "db", "cli", "web"], 2)]
    for i in range(rng.randrange(5, 8) + b.knobs.distractors):
        folder = f"{src}/{rng.choice(subdirs)}".rstrip("/")
        rel = b.name("py", awkward=b.awkward(p=0.3) and i % 3 == 0, folder=folder)
        lines = [f"def {words.pick(rng, 'nouns')}_{j}():" if j % 2 == 0 else f"    return {rng.randrange(99)}"
                 for j in range(rng.randrange(4, 9))]
        for _ in range(rng.randrange(0, 3)):
            k = rng.randrange(len(lines) + 1)
            lines.insert(k, f"# {marker}: {words.sentence(rng, 3)}")
        lines.insert(rng.randrange(len(lines) + 1), f"# {marker.lower()} maybe {words.pick(rng, 'nouns')}")
        b.file(rel, lines_text(lines))
        hits += [f"{rel}:{n}:{ln}" for n, ln in enumerate(lines, 1) if marker in ln]
    b.file(f"{src}/{vendor}/{b.name('py')}", lines_text([f"# {marker}: upstream code", "x = 1"]))
    b.file(b.name("md", folder=src), lines_text([f"{marker}: write the docs"]))
    if not hits:
        rel = b.file(b.name("py", folder=src), lines_text([f"# {marker}: first"]))
        hits.append(f"{rel}:1:# {marker}: first")
    out = b.output(b.name("txt", stem=marker.lower() + "_list"))
    b.say("recursive", marker=marker, src=show(src), vendor=show(f"{src}/{vendor}"), out=show(out))
    b.step(f"ls -R {q(src)}")
    b.step(f"grep -rn --include='*.py' --exclude-dir={vendor} {marker} {q(src)} | sort > {q(out)}")
    b.primary(out, lines_text(sorted(hits)), "text")


# ---- breadth intents (synthesis.breadth): grep -r, -o, -E
def _breadth2(b: TaskBuilder) -> None:
    rng = b.rng
    intent = rng.choice(["tree_files", "only_numbers", "either_word"])
    out = b.output(b.name("txt"))
    if intent == "tree_files":
        d = b.dirname(awkward=b.awkward(2, 0.3))
        word = words.pick(rng, "nouns")
        subs = [d, f"{d}/{words.pick(rng, 'cities')}", f"{d}/{words.pick(rng, 'fruits')}"]
        hits = []
        for i in range(rng.randrange(4, 8)):
            lines = [words.sentence(rng) for _ in range(rng.randrange(2, 5))]
            lines = [ln for ln in lines if word not in ln] or ["empty line"]
            if i % 2 == 0:
                lines.insert(rng.randrange(len(lines) + 1), f"{words.sentence(rng, 2)} {word} here")
            rel = b.file(b.name(rng.choice(["txt", "md", "cfg"]), folder=rng.choice(subs)), lines_text(lines))
            if i % 2 == 0:
                hits.append(rel)
        b.say("tree_files", word=word, d=show(d), out=show(out))
        b.step(f"grep -rl {word} {q(d)} | sort > {q(out)}")
        b.primary(out, lines_text(sorted(hits)), "text")
        return
    lines = content.log_lines(rng, rng.randrange(5, 10))
    f = b.file(b.name("log", awkward=b.awkward(2, 0.3)), lines_text(lines))
    if intent == "only_numbers":
        nums = [m for ln in lines for m in re.findall(r"[0-9]+", ln)]
        b.say("only_numbers", f=show(f), out=show(out))
        b.step(f"grep -oE '[0-9]+' {q(f)} > {q(out)}")
        b.primary(out, lines_text(nums), "text")
    else:
        toks = sorted({ln.split()[2] for ln in lines})
        one, two = (rng.sample(toks, 2) if len(toks) > 2 else (toks[0], "FATAL"))  # a level no line has
        b.say("either_word", one=one, two=two, f=show(f), out=show(out))
        b.step(f"grep -E '{one}|{two}' {q(f)} > {q(out)}")
        b.primary(out, lines_text([ln for ln in lines if one in ln or two in ln]), "text")
    b.unchanged(f)


BREADTH = {2: _breadth2}
generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5], BREADTH)
