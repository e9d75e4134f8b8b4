"""scripting: write small bash scripts (arguments, loops, error handling) that the verifier runs.

The verifier runs the script on inputs the agent never saw (and changes the data first), so a
script that hard-codes today's answer fails.
"""

from __future__ import annotations

from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "scripting"
VERSION = 1
LEVELS = {
    1: "one command writes a one-line script (fixed text, or a live count of a file)",
    2: "a script with arguments ($1, $2) made executable",
    3: "loops: count to N, number the lines of a file given as argument (names with spaces)",
    4: "argument checking with a message on stderr and exit 1 (with text_search inside)",
    5: "a directory report over files the verifier creates, sorted, with arithmetic",
}


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    s = b.name("sh", awkward=b.awkward())
    if rng.random() < 0.5:
        text = f"{rng.choice(['hello', 'hi', 'good morning', 'welcome'])} {words.pick(rng, 'people')}"
        b.say("print_text", s=show(s), text=text)
        b.step(f"echo \"echo '{text}'\" > {q(s)}")
        b.expect_run(f"bash {q(s)}", text)
    else:
        lines = [words.sentence(rng) for _ in range(rng.randrange(2, 9))]
        f = b.file(b.name("txt"), lines_text(lines))
        b.say("live_count", s=show(s), f=show(f))
        b.step(f"echo 'wc -l < {q(f)}' > {q(s)}")
        b.expect_run(f"bash {q(s)}", str(len(lines)), norm="strip")
        b.expect_run(f"echo extra >> {q(f)} && bash {q(s)}", str(len(lines) + 1), norm="strip")


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    s = b.name("sh", awkward=b.awkward(2, 0.3))
    intent = rng.choice(["greet", "add", "repeat"])
    if intent == "greet":
        word = rng.choice(["Hello", "Hi", "Welcome", "Greetings"])
        b.say("greet", s=show(s), word=word)
        b.step(f"printf '#!/bin/bash\\necho \"{word}, $1!\"\\n' > {q(s)}")
        names = words.sample(rng, "people", 2)
        for n in names:
            b.expect_run(f"./{q(s)} {n}", f"{word}, {n}!")
    elif intent == "add":
        b.say("add", s=show(s))
        b.step(f"printf '#!/bin/bash\\necho $(( $1 + $2 ))\\n' > {q(s)}")
        for _ in range(2):
            x, y = rng.randrange(1, 500), rng.randrange(1, 500)
            b.expect_run(f"./{q(s)} {x} {y}", str(x + y), norm="strip")
    else:
        b.say("repeat", s=show(s))
        b.step(f"printf '#!/bin/bash\\nfor i in $(seq \"$2\"); do echo \"$1\"; done\\n' > {q(s)}")
        for _ in range(2):
            w, n = words.pick(rng, "fruits"), rng.randrange(2, 6)
            b.expect_run(f"./{q(s)} {w} {n}", lines_text([w] * n))
    b.step(f"chmod +x {q(s)}")


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    s = b.name("sh", awkward=b.awkward(p=0.4))
    if rng.random() < 0.5:
        b.say("count_to", s=show(s))
        b.step(f"printf '#!/bin/bash\\nfor ((i = 1; i <= $1; i++)); do echo \"$i\"; done\\n' > {q(s)}")
        b.step(f"chmod +x {q(s)}")
        b.step(f"./{q(s)} 3")
        for n in (rng.randrange(2, 6), rng.randrange(7, 15)):
            b.expect_run(f"./{q(s)} {n}", lines_text([str(i) for i in range(1, n + 1)]))
    else:
        sep = rng.choice([": ", ") ", ". "])
        b.say("number_lines", s=show(s), sep=sep.strip())
        b.step(f"printf '#!/bin/bash\\nn=0\\nwhile IFS= read -r line; do\\n  n=$((n + 1))\\n"
               f"  echo \"$n{sep}$line\"\\ndone < \"$1\"\\n' > {q(s)}")
        b.step(f"chmod +x {q(s)}")
        sample = b.file(b.name("txt"), lines_text([words.sentence(rng, 3) for _ in range(3)]))
        b.step(f"./{q(s)} {q(sample)}")
        probe = f".check {words.pick(rng, 'nouns')}.txt"
        lines = [words.sentence(rng, 3) for _ in range(rng.randrange(2, 5))]
        b.expect_run(f"printf '%s\\n' {' '.join(q(ln) for ln in lines)} > {q(probe)} && ./{q(s)} {q(probe)}",
                     lines_text([f"{i}{sep}{ln}" for i, ln in enumerate(lines, 1)]))


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    s = b.name("sh", awkward=b.awkward(p=0.4))
    word = words.pick(rng, "nouns")
    msg = rng.choice(["missing", "not found", "no such file"])
    b.say("guarded_count", s=show(s), msg=msg, word=word)
    b.step(f"cat > {q(s)} <<'EOF'\n#!/bin/bash\nif [ ! -f \"$1\" ]; then\n  echo \"{msg}: $1\" >&2\n  exit 1\nfi\n"
           f"grep -c {word} \"$1\"\nEOF")
    b.step(f"chmod +x {q(s)}")
    lines = [words.sentence(rng) for _ in range(rng.randrange(4, 9))]
    for i in rng.sample(range(len(lines)), rng.randrange(1, len(lines))):
        lines[i] += f" {word}"
    data = b.file(b.name("txt", awkward=b.awkward(p=0.5)), lines_text(lines))
    b.step(f"./{q(s)} {q(data)}")
    b.expect_run(f"./{q(s)} {q(data)}", str(sum(word in ln for ln in lines)), norm="strip")
    ghost = f"no such {words.pick(rng, 'nouns')}.txt"
    b.expect_run(f"./{q(s)} {q(ghost)} 2>&1 >/dev/null", f"{msg}: {ghost}", code=1)


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    s = b.name("sh", awkward=b.awkward(p=0.3))
    ext = rng.choice(["csv", "tsv", "dat"])
    b.say("dir_report", s=show(s), ext=ext)
    b.step(f"cat > {q(s)} <<'EOF'\n#!/bin/bash\nfor f in \"$1\"/*.{ext}; do\n"
           f"  echo \"$(basename \"$f\"): $(( $(wc -l < \"$f\") - 1 ))\"\ndone\nEOF")
    b.step(f"chmod +x {q(s)}")
    demo = b.dirname()
    for _ in range(2):
        b.file(b.name(ext, folder=demo), lines_text(["id,value", "1,2"]))
    b.step(f"./{q(s)} {q(demo)}")
    probe = f".probe {words.pick(rng, 'nouns')}"
    setup, want = [f"rm -rf {q(probe)}", f"mkdir {q(probe)}"], []
    names = sorted(f"{w}.{ext}" for w in words.sample(rng, "fruits", rng.randrange(2, 5)))
    names[0] = names[0].replace(".", " copy.", 1)
    for nm in sorted(names):
        rows = rng.randrange(0, 6)
        setup.append(f"printf 'h\\n%.0s' x > {q(probe + '/' + nm)}")
        if rows:
            setup.append(f"seq {rows} >> {q(probe + '/' + nm)}")
        want.append(f"{nm}: {rows}")
    setup.append(f"echo x > {q(probe + '/skip.txt')}")
    b.expect_run(" && ".join([*setup, f"LC_ALL=C ./{q(s)} {q(probe)}"]), lines_text(want))


generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5])
