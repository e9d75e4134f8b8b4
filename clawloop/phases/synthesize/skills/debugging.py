"""debugging: make a broken script or its inputs work again (read the error, fix, re-run).

The verifier re-runs the fixed script after changing its input, so printing a constant in
place of the real fix fails.
"""

from __future__ import annotations

from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "debugging"
VERSION = 1
LEVELS = {
    1: "one sed fixes a misspelled command in a script the instruction names",
    2: "read the script first: a wrong input file name or a misspelled variable",
    3: "a bad shebang plus a missing execute bit, or an output folder the script assumes",
    4: "recovery: a Python report crashes on a malformed data line; fix the data, run it (with csv)",
    5: "two bugs in one script, found by running it; the result written by the fixed script",
}

_TYPOS = {"echo": "ecoh", "grep": "gerp", "sort": "sotr", "wc": "wcc", "cat": "cta", "head": "haed"}


def _data(b: TaskBuilder, ext: str = "txt", awkward: bool = False) -> tuple[str, list[str]]:
    lines = [words.sentence(b.rng) for _ in range(b.rng.randrange(3, 9))]
    return b.file(b.name(ext, awkward=awkward), lines_text(lines)), lines


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    f, lines = _data(b)
    cmd = rng.choice(["wc", "head", "sort"])
    label = rng.choice(["Lines", "Total", "Count"])
    if cmd == "wc":
        body = f'echo "{label}: $({_TYPOS["wc"]} -l < {f})"\n'
        want = f"{label}: {len(lines)}"
        want2 = f"{label}: {len(lines) + 1}"
        wrong, right = _TYPOS["wc"], "wc"
    elif cmd == "head":
        body = f"{_TYPOS['head']} -n 2 {f}\n"
        want = lines_text(lines[:2])
        want2 = want
        wrong, right = _TYPOS["head"], "head"
    else:
        body = f"{_TYPOS['sort']} {f}\n"
        want = lines_text(sorted(lines))
        want2 = lines_text(sorted([*lines, "aaa extra"]))
        wrong, right = _TYPOS["sort"], "sort"
    s = b.file(b.name("sh", awkward=b.awkward()), "#!/bin/bash\n" + body, mode=0o755)
    b.say("typo", s=show(s), wrong=wrong)
    b.step(f"sed -i 's/{wrong}/{right}/' {q(s)}")
    b.expect_run(f"bash {q(s)}", want)
    extra = "aaa extra" if cmd == "sort" else "extra line"
    b.expect_run(f"echo '{extra}' >> {q(f)} && bash {q(s)}", want2)


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    if rng.random() < 0.5:
        # the script reads a file name that does not exist; the real file has another extension
        f, lines = _data(b, rng.choice(["csv", "log", "dat"]))
        stem = f.rsplit(".", 1)[0]
        s = b.file(b.name("sh", awkward=b.awkward(2, 0.3)),
                   f"#!/bin/bash\nwc -l < {stem}.txt\n", mode=0o755)
        b.say("wrong_file", s=show(s), f=show(f))
        b.step(f"cat {q(s)}")
        b.step(f"sed -i 's/{stem}.txt/{f}/' {q(s)}")
        b.expect_run(f"bash {q(s)}", str(len(lines)), norm="strip")
        b.expect_run(f"echo more >> {q(f)} && bash {q(s)}", str(len(lines) + 1), norm="strip")
    else:
        var = rng.choice(["name", "target", "city", "user"])
        typo = var[0] + var[2] + var[1] + var[3:]
        s = b.file(b.name("sh", awkward=b.awkward(2, 0.3)),
                   f'#!/bin/bash\n{var}="$1"\necho "Report for ${typo}"\n', mode=0o755)
        b.say("bad_var", s=show(s))
        b.step(f"cat {q(s)}")
        b.step(f"sed -i 's/\\${typo}/${var}/' {q(s)}")
        for w in words.sample(rng, "cities", 2):
            b.expect_run(f"bash {q(s)} {w}", f"Report for {w}")


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.4)
    if rng.random() < 0.5:
        word = rng.choice(["ready", "done", "ok", "started"])
        s = b.file(b.name("sh", awkward=awk), f"#!/bin/bsh\necho {word} $1\n", mode=0o644)
        b.say("shebang", s=show(s))
        b.step(f"./{q(s)}")
        b.step(f"head -n 1 {q(s)}")
        b.step(f"sed -i '1s|.*|#!/bin/bash|' {q(s)}")
        b.step(f"chmod +x {q(s)}")
        arg = words.pick(rng, "nouns")
        b.expect_run(f"./{q(s)} {arg}", f"{word} {arg}")
    else:
        f, lines = _data(b)
        outdir = b.reserve(rng.choice(["reports", "out", "build", "results"]))
        res = f"{outdir}/{rng.choice(['summary', 'lines', 'count'])}.txt"
        s = b.file(b.name("sh", awkward=awk), f"#!/bin/bash\nwc -l < {f} > {res}\n", mode=0o755)
        b.say("missing_dir", s=show(s), res=show(res))
        b.step(f"./{q(s)}")
        b.step(f"mkdir {outdir}")
        b.step(f"./{q(s)}")
        b.expect_file(res, str(len(lines)), "strip")
        b.unchanged(s)


_REPORT_PY = """import sys

total = 0
for lineno, line in enumerate(open(sys.argv[1]), 1):
    if lineno == 1:
        continue
    name, qty = line.strip().split(",")
    total += int(qty)
print("total", total)
"""


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    names = words.sample(rng, "fruits", rng.randrange(4, 9))
    rows = [[n, str(rng.randrange(1, 50))] for n in names]
    bad_kind = rng.choice(["n/a", "unknown", "-", "TBD"])
    bad = [words.pick(rng, "nouns"), bad_kind]
    at = rng.randrange(1, len(rows))
    data = b.file(b.name("csv", awkward=b.awkward(p=0.4)),
                  lines_text(["name,qty", *(",".join(r) for r in rows[:at]), ",".join(bad),
                              *(",".join(r) for r in rows[at:])]))
    py = b.file(b.name("py", stem=rng.choice(["report", "summarize", "totals"])), _REPORT_PY)
    out = b.output(b.name("txt"))
    b.say("bad_data", py=show(py), data=show(data), out=show(out), bad=bad_kind)
    b.step(f"python3 {q(py)} {q(data)}")
    b.step(f"grep -n ',{bad_kind}$' {q(data)}")
    pattern = bad_kind.replace("/", "\\/")
    b.step(f"sed -i '/,{pattern}$/d' {q(data)}")
    b.step(f"python3 {q(py)} {q(data)} > {q(out)}")
    b.unchanged(py)
    b.expect_file(data, lines_text(["name,qty", *(",".join(r) for r in rows)]), "exact")
    b.primary(out, f"total {sum(int(r[1]) for r in rows)}", "text")


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    f, lines = _data(b, "log", awkward=b.awkward(p=0.4))
    word = rng.choice(lines[0].split())
    hits = sum(word in ln for ln in lines)
    res = b.output(b.name("txt", stem="matches"))
    label = rng.choice(["matches", "hits", "found"])
    wrong_name = f.rsplit(".", 1)[0] + ".txt"
    body = (f"#!/bin/bash\nsrc={q(wrong_name)}\nn=$({_TYPOS['grep']} -c {word} \"$src\")\n"
            f"echo \"{label}: $n\" > {q(res)}\n")
    s = b.file(b.name("sh", stem=rng.choice(["scan", "check", "audit"]) + f"_{rng.randrange(10, 99)}"), body,
               mode=0o755)
    b.say("two_bugs", s=show(s), res=show(res), f=show(f))
    b.step(f"./{s}")
    b.step(f"sed -i 's/{_TYPOS['grep']}/grep/' {s}")
    b.step(f"sed -i 's|^src=.*|src=\"{f}\"|' {s}")
    b.step(f"./{s}")
    b.expect_file(res, f"{label}: {hits}", "text")
    b.expect_run(f"echo '{word}' >> {q(f)} && ./{s} && cat {q(res)}", f"{label}: {hits + 1}")


generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5])
