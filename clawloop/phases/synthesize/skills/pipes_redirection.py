"""pipes_redirection: redirect stdout/stderr, append, here-docs, pipelines, exit codes."""

from __future__ import annotations

import random

from clawloop.phases.synthesize import content, words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "pipes_redirection"
VERSION = 1
LEVELS = {
    1: "one redirection: first/last lines to a file, append a line, concatenate two files",
    2: "stdout and stderr apart, together, or errors discarded, from a given tool script",
    3: "multi-line file contents, a line range, merge many files; exit status to a file",
    4: "stderr-only pipelines and command substitution into a report line (composition)",
    5: "compare two lists with process substitution (comm), larger inputs",
}


def _tool(rng: random.Random, code: int = 0) -> tuple[str, list[str], list[str]]:
    """A script writing some lines to stdout and some to stderr, in a fixed interleaving."""
    out, err, body = [], [], ["#!/bin/bash"]
    for _ in range(rng.randrange(3, 7)):
        if rng.random() < 0.6:
            line = f"ok {words.sentence(rng, 3)}"
            out.append(line)
            body.append(f"echo '{line}'")
        else:
            line = f"{rng.choice(['WARN', 'ERROR'])} {words.sentence(rng, 3)}"
            err.append(line)
            body.append(f"echo '{line}' >&2")
    if not out:
        out.append("ok done")
        body.append("echo 'ok done'")
    if not err:
        err.append("WARN nothing to do")
        body.append("echo 'WARN nothing to do' >&2")
    if code:
        body.append(f"exit {code}")
    return lines_text(body), out, err


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward()
    intent = rng.choice(["head", "tail", "append", "concat"])
    if intent in ("head", "tail"):
        lines = content.log_lines(rng, rng.randrange(8, 30))
        n = rng.randrange(2, 6)
        f = b.file(b.name("log", awkward=awk), lines_text(lines))
        out = b.output(b.name("txt"))
        b.say(intent, n=n, f=show(f), out=show(out))
        b.step(f"{intent} -n {n} {q(f)} > {q(out)}")
        b.primary(out, lines_text(lines[:n] if intent == "head" else lines[-n:]), "text")
        b.unchanged(f)
    elif intent == "append":
        old = [f"{words.pick(rng, 'people')}: {words.sentence(rng, 3)}" for _ in range(rng.randrange(2, 5))]
        f = b.file(b.name("txt", awkward=awk), lines_text(old))
        line = f"{words.pick(rng, 'people')}: {words.sentence(rng, 3)}"
        b.say("append", f=show(f), line=line)
        b.step(f"echo {q(line)} >> {q(f)}")
        b.expect_file(f, lines_text([*old, line]), "text")
    else:
        a = b.file(b.name("txt", awkward=awk), lines_text([words.sentence(rng) for _ in range(rng.randrange(1, 4))]))
        c = b.file(b.name("txt"), lines_text([words.sentence(rng) for _ in range(rng.randrange(1, 4))]))
        out = b.output(b.name("txt"))
        b.say("concat", a=show(a), c=show(c), out=show(out))
        b.step(f"cat {q(a)} {q(c)} > {q(out)}")
        b.primary(out, b.files[f"/workspace/{a}"].content + b.files[f"/workspace/{c}"].content, "exact")


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    body, out_lines, err_lines = _tool(rng)
    s = b.file(b.name("sh", awkward=b.awkward(2, 0.3)), body, mode=0o755)
    intent = rng.choice(["split", "merge", "discard"])
    if intent == "split":
        out, err = b.output(b.name("txt", stem="stdout")), b.output(b.name("txt", stem="stderr"))
        b.say("split", s=show(s), out=show(out), err=show(err))
        b.step(f"./{q(s)} > {q(out)} 2> {q(err)}")
        b.expect_file(err, lines_text(err_lines), "text")
        b.primary(out, lines_text(out_lines), "text")
    elif intent == "merge":
        out = b.output(b.name("log"))
        merged = [ln.split("'")[1] for ln in body.splitlines()[1:]]
        b.say("merge", s=show(s), out=show(out))
        b.step(f"./{q(s)} > {q(out)} 2>&1")
        b.primary(out, lines_text(merged), "text")
    else:
        out = b.output(b.name("txt"))
        b.say("discard", s=show(s), out=show(out))
        b.step(f"./{q(s)} 2> /dev/null > {q(out)}")
        b.primary(out, lines_text(out_lines), "text")


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.5)
    intent = rng.choice(["multiline", "range", "merge_dir", "status"])
    if intent == "multiline":
        lines = [f"{k}={v}" for k, v in content.kv_config(rng, rng.sample(content.CONFIG_KEYS, rng.randrange(3, 5))).items()]
        f = b.output(b.name("env", awkward=awk))
        b.say("multiline", f=show(f), lines=" / ".join(lines), n=len(lines))
        b.step(f"printf '%s\\n' {' '.join(q(ln) for ln in lines)} > {q(f)}")
        b.primary(f, lines_text(lines), "text")
    elif intent == "range":
        lines = [f"{i + 1:03d} {words.sentence(rng, 4)}" for i in range(rng.randrange(20, 60))]
        a = rng.randrange(3, len(lines) // 2)
        z = rng.randrange(a + 2, len(lines))
        f = b.file(b.name("txt", awkward=awk), lines_text(lines))
        out = b.output(b.name("txt"))
        b.say("range", a=a, z=z, f=show(f), out=show(out))
        b.step(f"sed -n '{a},{z}p' {q(f)} > {q(out)}")
        b.primary(out, lines_text(lines[a - 1:z]), "text")
        b.unchanged(f)
    elif intent == "merge_dir":
        d = b.dirname(awkward=awk)
        allw: list[str] = []
        for i in range(rng.randrange(2, 5)):
            ws = words.sample(rng, "fruits", rng.randrange(2, 6))
            allw += ws
            b.file(b.name("txt", awkward=awk and i == 0, folder=d), lines_text(ws))
        b.file(b.name("md", folder=d), lines_text(["# notes", words.pick(rng, "nouns")]))
        out = b.output(b.name("txt"))
        b.say("merge_dir", d=show(d), out=show(out))
        b.step(f"cat {q(d)}/*.txt | sort -u > {q(out)}")
        b.primary(out, lines_text(sorted(set(allw))), "text")
    else:
        code = rng.randrange(1, 9)
        body, _, _ = _tool(rng, code)
        s = b.file(b.name("sh", awkward=awk), body, mode=0o755)
        out = b.output(b.name("txt", stem="status"))
        b.say("status", s=show(s), out=show(out))
        b.step(f"./{q(s)}; echo $? > {q(out)}")
        b.primary(out, str(code), "strip")


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    if rng.random() < 0.5:
        body, out_lines, err_lines = _tool(rng)
        s = b.file(b.name("sh", awkward=b.awkward(p=0.4)), body, mode=0o755)
        level = rng.choice(["WARN", "ERROR"])
        out = b.output(b.name("txt"))
        b.say("stderr_count", s=show(s), level=level, out=show(out))
        b.step(f"./{q(s)} 2>&1 > /dev/null | grep -c {level} > {q(out)}")
        b.primary(out, str(sum(level in ln for ln in err_lines)), "strip")
        b.unchanged(s)
    else:
        d = b.dirname(awkward=b.awkward(p=0.4))
        ext = rng.choice(["txt", "csv", "md"])
        n = rng.randrange(2, 7)
        for i in range(n):
            b.file(b.name(ext, awkward=i == 0 and b.awkward(p=0.5), folder=d), f"{words.sentence(rng)}\n")
        for _ in range(b.distractor_count(1)):
            b.file(b.name("bak", folder=d), "old\n")
        label = rng.choice(["files", "count", "total", "documents"])
        out = b.output(b.name("txt", stem="report"))
        b.say("report_line", d=show(d), ext=ext, label=label, out=show(out))
        b.step(f"ls {q(d)}")
        b.step(f"echo \"{label}: $(ls {q(d)}/*.{ext} | wc -l)\" > {q(out)}")
        b.primary(out, f"{label}: {n}", "text")


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    pool = list(words.words("nouns"))
    rng.shuffle(pool)
    a_set = pool[: rng.randrange(40, 90)]
    b_set = a_set[rng.randrange(5, 20):] + pool[100: 100 + rng.randrange(5, 25)]
    rng.shuffle(a_set)
    rng.shuffle(b_set)
    fa = b.file(b.name("txt", stem=rng.choice(["yesterday", "before", "old_list"]) + f"_{rng.randrange(10, 99)}"),
                lines_text(a_set))
    fb = b.file(b.name("txt", stem=rng.choice(["today", "after", "new_list"]) + f"_{rng.randrange(10, 99)}"),
                lines_text(b_set))
    out = b.output(b.name("txt", awkward=b.awkward(p=0.4)))
    if rng.random() < 0.5:
        b.say("only_new", a=show(fa), bb=show(fb), out=show(out))
        b.step(f"head -n 3 {q(fa)} {q(fb)}")
        b.step(f"comm -13 <(sort {q(fa)}) <(sort {q(fb)}) > {q(out)}")
        b.primary(out, lines_text(sorted(set(b_set) - set(a_set))), "text")
    else:
        b.say("in_both", a=show(fa), bb=show(fb), out=show(out))
        b.step(f"head -n 3 {q(fa)} {q(fb)}")
        b.step(f"comm -12 <(sort {q(fa)}) <(sort {q(fb)}) > {q(out)}")
        b.primary(out, lines_text(sorted(set(b_set) & set(a_set))), "text")


# ---- breadth intents (synthesis.breadth): tee, comm -23 / -12, diff
def _breadth2(b: TaskBuilder) -> None:
    rng = b.rng
    intent = rng.choice(["tee_two", "only_first", "common_sorted", "diff_one"])
    if intent == "tee_two":
        items = words.sample(rng, "cities", rng.randrange(4, 9))
        f = b.file(b.name("txt", awkward=b.awkward(2, 0.3)), lines_text(items))
        one, two = b.output(b.name("txt")), b.name("txt")
        b.say("tee_two", f=show(f), one=show(one), two=show(two))
        b.step(f"sort {q(f)} | tee {q(one)} > {q(two)}")
        b.expect_file(one, lines_text(sorted(items)), "text")
        b.expect_file(two, lines_text(sorted(items)), "text")
        b.unchanged(f)
        return
    pool = words.sample(rng, "nouns", rng.randrange(8, 14))
    cut = rng.randrange(2, len(pool) - 4)
    first, second = sorted(pool[:cut + 3]), sorted(pool[cut:])
    a = b.file(b.name("list", awkward=b.awkward(2, 0.3)), lines_text(first))
    out = b.output(b.name("txt"))
    if intent == "diff_one":
        k = rng.randrange(len(first))
        new = [*first]
        new[k] = rng.choice([w for w in words.words("fruits") if w not in first])  # one line changed, no other match
        c = b.file(b.name("list"), lines_text(new))
        b.say("diff_one", a=show(a), c=show(c), out=show(out))
        b.step(f"diff {q(a)} {q(c)} > {q(out)}")
        b.primary(out, f"{k + 1}c{k + 1}\n< {first[k]}\n---\n> {new[k]}\n", "exact")
        return
    c = b.file(b.name("list"), lines_text(second))
    if intent == "only_first":
        b.say("only_first", a=show(a), c=show(c), out=show(out))
        b.step(f"comm -23 {q(a)} {q(c)} > {q(out)}")
        b.primary(out, lines_text([w for w in first if w not in second]), "text")
    else:
        b.say("common_sorted", a=show(a), c=show(c), out=show(out))
        b.step(f"comm -12 {q(a)} {q(c)} > {q(out)}")
        b.primary(out, lines_text([w for w in first if w in second]), "text")
    b.unchanged(a, c)


BREADTH = {2: _breadth2}
generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5], BREADTH)
