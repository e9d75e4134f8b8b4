"""stream_edit: transform text with sed, tr, cut and awk (in place or into a new file)."""

from __future__ import annotations

import random
import re

from clawloop.phases.synthesize import content, words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "stream_edit"
VERSION = 1
LEVELS = {
    1: "one command: replace a word in place, upper-case a file, delete matching lines",
    2: "one targeted edit: print line N, drop blank or comment lines, change one config value",
    3: "fields with cut/awk, or one replacement over several files with a backup that must not change",
    4: "recovery: CRLF line endings to fix before editing; or extract + normalize + sort (with sort_count)",
    5: "several edits over every config in a tree with awkward names; backups untouched",
}


def _lines_with(rng: random.Random, word: str, n: int) -> list[str]:
    lines = [words.sentence(rng) for _ in range(n)]
    for i in rng.sample(range(n), rng.randrange(1, max(2, n // 2))):
        parts = lines[i].split()
        parts.insert(rng.randrange(len(parts) + 1), word)
        lines[i] = " ".join(parts)
    return lines


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward()
    intent = rng.choice(["replace", "upper", "delete_lines"])
    if intent == "replace":
        old, new = words.sample(rng, "nouns", 2)
        lines = [ln for ln in _lines_with(rng, old, rng.randrange(3, 9))]
        f = b.file(b.name("txt", awkward=awk), lines_text(lines))
        b.say("replace", f=show(f), old=old, new=new)
        b.step(f"sed -i 's/{old}/{new}/g' {q(f)}")
        b.expect_file(f, lines_text([ln.replace(old, new) for ln in lines]), "exact")
    elif intent == "upper":
        lines = [words.sentence(rng) for _ in range(rng.randrange(2, 7))]
        f = b.file(b.name("txt", awkward=awk), lines_text(lines))
        out = b.output(b.name("txt"))
        b.say("upper", f=show(f), out=show(out))
        b.step(f"tr a-z A-Z < {q(f)} > {q(out)}")
        b.primary(out, lines_text([ln.upper() for ln in lines]), "text")
        b.unchanged(f)
    else:
        word = words.pick(rng, "nouns")
        lines = _lines_with(rng, word, rng.randrange(4, 10))
        f = b.file(b.name("txt", awkward=awk), lines_text(lines))
        b.say("delete_lines", f=show(f), word=word)
        b.step(f"sed -i '/{word}/d' {q(f)}")
        b.expect_file(f, lines_text([ln for ln in lines if word not in ln]), "exact")


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(2, 0.3)
    intent = rng.choice(["line_n", "drop_blank", "drop_comments", "set_value"])
    if intent == "line_n":
        lines = [words.sentence(rng) for _ in range(rng.randrange(6, 20))]
        n = rng.randrange(2, len(lines) + 1)
        f = b.file(b.name("txt", awkward=awk), lines_text(lines))
        out = b.output(b.name("txt"))
        b.say("line_n", n=n, f=show(f), out=show(out))
        b.step(f"sed -n '{n}p' {q(f)} > {q(out)}")
        b.primary(out, lines[n - 1] + "\n", "text")
        b.unchanged(f)
    elif intent == "drop_blank":
        lines = [words.sentence(rng) for _ in range(rng.randrange(4, 10))]
        for _ in range(rng.randrange(2, 5)):
            lines.insert(rng.randrange(1, len(lines)), "")
        f = b.file(b.name("md", awkward=awk), lines_text(lines))
        b.say("drop_blank", f=show(f))
        b.step(f"sed -i '/^$/d' {q(f)}")
        b.expect_file(f, lines_text([ln for ln in lines if ln]), "exact")
    elif intent == "drop_comments":
        lines = [f"{k}={v}" for k, v in content.kv_config(rng, rng.sample(content.CONFIG_KEYS, 5)).items()]
        for _ in range(rng.randrange(2, 5)):
            lines.insert(rng.randrange(len(lines) + 1), f"# {words.sentence(rng, 4)}")
        f = b.file(b.name("conf", awkward=awk), lines_text(lines))
        out = b.output(b.name("conf"))
        b.say("drop_comments", f=show(f), out=show(out))
        b.step(f"grep -v '^#' {q(f)} > {q(out)}")
        b.primary(out, lines_text([ln for ln in lines if not ln.startswith("#")]), "text")
        b.unchanged(f)
    else:
        cfg = content.kv_config(rng, rng.sample(content.CONFIG_KEYS, rng.randrange(4, 8)))
        key = rng.choice(sorted(cfg))
        new = str(rng.randrange(10000, 99999))
        f = b.file(b.name("ini", awkward=awk), lines_text([f"{k}={v}" for k, v in cfg.items()]))
        b.say("set_value", f=show(f), key=key, value=new)
        b.step(f"sed -i 's/^{key}=.*/{key}={new}/' {q(f)}")
        b.expect_file(f, lines_text([f"{k}={new if k == key else v}" for k, v in cfg.items()]), "exact")


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.5)
    if rng.random() < 0.5:
        sep = rng.choice([":", ",", ";"])
        people = words.sample(rng, "people", rng.randrange(4, 9))
        rows = [sep.join([p, str(rng.randrange(1000, 2000)), words.pick(rng, "cities"), f"/home/{p}"])
                for p in people]
        col = rng.randrange(1, 5)
        f = b.file(b.name("txt", awkward=awk), lines_text(rows))
        out = b.output(b.name("txt"))
        b.say("field", col=col, sep=sep, f=show(f), out=show(out))
        b.step(f"head -n 2 {q(f)}")
        b.step(f"cut -d'{sep}' -f{col} {q(f)} > {q(out)}")
        b.primary(out, lines_text([r.split(sep)[col - 1] for r in rows]), "text")
        b.unchanged(f)
    else:
        d = b.dirname(awkward=awk)
        old, new = words.pick(rng, "cities"), words.pick(rng, "cities")
        while new == old:
            new = words.pick(rng, "cities")
        for _ in range(rng.randrange(2, 5)):
            lines = [f"region={old}", f"owner={words.pick(rng, 'people')}", f"backup_region={old}"]
            rel = b.file(b.name("conf", awkward=b.awkward(p=0.4), folder=d), lines_text(lines))
            b.expect_file(rel, lines_text([ln.replace(old, new) for ln in lines]), "exact")
        for _ in range(b.distractor_count(1)):
            b.unchanged(b.file(b.name("conf.bak", folder=d), lines_text([f"region={old}"])))
        b.say("replace_many", d=show(d), old=old, new=new)
        b.step(f"sed -i 's/{old}/{new}/g' {q(d)}/*.conf")


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    if rng.random() < 0.5:
        # broken start: Windows line endings; a plain anchored edit silently misses
        cfg = content.kv_config(rng, rng.sample(content.CONFIG_KEYS, rng.randrange(4, 7)))
        key = rng.choice(sorted(cfg))
        new = words.pick(rng, "nouns")
        f = b.file(b.name("cfg", awkward=b.awkward(p=0.4)),
                   "".join(f"{k}={v}\r\n" for k, v in cfg.items()))
        b.say("crlf_fix", f=show(f), key=key, value=new)
        b.step(f"cat -A {q(f)} | head -n 3")
        b.step(f"sed -i 's/\\r$//' {q(f)}")
        b.step(f"sed -i 's/^{key}=.*/{key}={new}/' {q(f)}")
        b.expect_file(f, lines_text([f"{k}={new if k == key else v}" for k, v in cfg.items()]), "exact")
    else:
        # composition with sort_count: normalize case of one column, then deduplicate
        rows = []
        for _ in range(rng.randrange(8, 16)):
            city = words.pick(rng, "cities")
            city = rng.choice([city, city.upper(), city.capitalize()])
            rows.append(f"{words.pick(rng, 'people')},{city},{rng.randrange(1, 99)}")
        f = b.file(b.name("csv", awkward=b.awkward(p=0.4)), lines_text(rows))
        out = b.output(b.name("txt"))
        b.say("normalize_unique", f=show(f), out=show(out))
        b.step(f"head -n 3 {q(f)}")
        b.step(f"cut -d, -f2 {q(f)} | tr A-Z a-z | sort -u > {q(out)}")
        b.primary(out, lines_text(sorted({r.split(",")[1].lower() for r in rows})), "text")
        b.unchanged(f)


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    root = b.dirname(awkward=b.awkward(p=0.3))
    key = rng.choice(["debug", "verbose", "trace"])
    expected: dict[str, str] = {}
    for i in range(rng.randrange(3, 6)):
        folder = root if i % 2 == 0 else f"{root}/{rng.choice(['site', 'local', 'prod'])}"
        rel = b.name("ini", awkward=b.awkward(p=0.5) and i == 1, folder=folder)
        lines = [f"; {words.sentence(rng, 3)}", f"{key}={rng.choice(['true', 'false'])}",
                 f"name={words.pick(rng, 'nouns')}", f"; {words.sentence(rng, 2)}", f"{key}_level=true"]
        rng.shuffle(lines)
        b.file(rel, lines_text(lines))
        kept = [ln for ln in lines if not ln.startswith(";")]
        expected[rel.split("/", 1)[1]] = lines_text([f"{key}=false" if ln == f"{key}=true" else ln for ln in kept])
    for _ in range(b.distractor_count(1)):
        bak = b.file(b.name("ini.bak", folder=root), lines_text([f"{key}=true", "; keep me"]))
        expected[bak.split("/", 1)[1]] = lines_text([f"{key}=true", "; keep me"])
    b.say("tree_edit", root=show(root), key=key)
    b.step(f"find {q(root)} -name '*.ini'")
    b.step(f"find {q(root)} -name '*.ini' -exec sed -i 's/^{key}=true$/{key}=false/' {{}} +")
    b.step(f"find {q(root)} -name '*.ini' -exec sed -i '/^;/d' {{}} +")
    b.expect_tree(root, expected)


# ---- breadth intents (synthesis.breadth): sed -e twice, tr -d, tac, cut -c, paste -s -d
def _breadth2(b: TaskBuilder) -> None:
    rng = b.rng
    intent = rng.choice(["two_swaps", "strip_digits", "last_first", "first_chars", "one_line"])
    lines = [words.sentence(rng, rng.randrange(3, 6)) for _ in range(rng.randrange(4, 9))]
    out = b.output(b.name("txt"))
    if intent == "strip_digits":
        lines = [" ".join(f"{w}{rng.randrange(10, 999)}" if rng.random() < 0.3 else w for w in ln.split())
                 for ln in lines]
    f = b.file(b.name("txt", awkward=b.awkward(2, 0.3)), lines_text(lines))
    if intent == "two_swaps":
        plain = sorted({w for ln in lines for w in ln.split() if w.isalpha() and w.isascii()})
        a, c = rng.sample(plain, 2) if len(plain) > 1 else (plain[0], plain[0])
        x, y = (w.lower() for w in words.sample(rng, "people", 2))
        want = [ln.replace(a, x).replace(c, y) for ln in lines]  # sed runs its scripts in order
        b.say("two_swaps", a=a, x=x, c=c, y=y, f=show(f), out=show(out))
        b.step(f"sed -e 's/{a}/{x}/g' -e 's/{c}/{y}/g' {q(f)} > {q(out)}")
    elif intent == "strip_digits":
        want = [re.sub(r"[0-9]", "", ln) for ln in lines]
        b.say("strip_digits", f=show(f), out=show(out))
        b.step(f"tr -d '0-9' < {q(f)} > {q(out)}")
    elif intent == "last_first":
        want = lines[::-1]
        b.say("last_first", f=show(f), out=show(out))
        b.step(f"tac {q(f)} > {q(out)}")
    elif intent == "first_chars":
        n = rng.randrange(3, 9)
        want = [ln[:n] for ln in lines]
        b.say("first_chars", n=n, f=show(f), out=show(out))
        b.step(f"cut -c1-{n} {q(f)} > {q(out)}")
    else:
        want = [",".join(lines)]
        b.say("one_line", f=show(f), out=show(out))
        b.step(f"paste -sd, {q(f)} > {q(out)}")
    b.primary(out, lines_text(want), "text")
    b.unchanged(f)


BREADTH = {2: _breadth2}
generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5], BREADTH)
