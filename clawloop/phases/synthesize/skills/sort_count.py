"""sort_count: sort, deduplicate and count with sort, uniq, wc, head and awk."""

from __future__ import annotations

import random
from collections import Counter

from clawloop.phases.synthesize import content, words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "sort_count"
VERSION = 1
LEVELS = {
    1: "one command: sort a list, count lines or words",
    2: "one command with an option: numeric, reverse, unique sort, or count distinct",
    3: "frequency questions (most common item, top N) needing a short pipeline; awkward names",
    4: "count per key in a two-column file (with text_search/csv); comment lines to skip",
    5: "hundreds of lines: totals per key ranked by total, header and comments to drop",
}


def _kind(rng: random.Random) -> str:
    return rng.choice(["people", "cities", "fruits", "nouns"])


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward()
    intent = rng.choice(["sort", "count_lines", "count_words"])
    if intent == "sort":
        kind = _kind(rng)
        items = content.words_unique(rng, kind, rng.randrange(5, 12))
        f = b.file(b.name("txt", awkward=awk, stem=kind if rng.random() < 0.3 else None), lines_text(items))
        out = b.output(b.name("txt"))
        b.say("sort", f=show(f), out=show(out))
        b.step(f"sort {q(f)} > {q(out)}")
        b.primary(out, lines_text(sorted(items)), "text")
    elif intent == "count_lines":
        lines = [words.sentence(rng) for _ in range(rng.randrange(3, 30))]
        f = b.file(b.name(rng.choice(["txt", "md", "log"]), awkward=awk), lines_text(lines))
        out = b.output(b.name("txt"))
        b.say("count_lines", f=show(f), out=show(out))
        b.step(f"wc -l < {q(f)} > {q(out)}")
        b.primary(out, str(len(lines)), "strip")
    else:
        lines = [words.sentence(rng) for _ in range(rng.randrange(2, 8))]
        f = b.file(b.name("txt", awkward=awk), lines_text(lines))
        out = b.output(b.name("txt"))
        b.say("count_words", f=show(f), out=show(out))
        b.step(f"wc -w < {q(f)} > {q(out)}")
        b.primary(out, str(sum(len(ln.split()) for ln in lines)), "strip")
    b.unchanged(f)


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(2, 0.3)
    intent = rng.choice(["numeric", "reverse", "unique", "distinct_count"])
    out = b.output(b.name("txt"))
    if intent == "numeric":
        nums = content.distinct_ints(rng, rng.randrange(6, 14), 1, 5000)
        f = b.file(b.name("txt", awkward=awk), lines_text([str(n) for n in nums]))
        b.say("numeric", f=show(f), out=show(out))
        b.step(f"sort -n {q(f)} > {q(out)}")
        b.primary(out, lines_text([str(n) for n in sorted(nums)]), "text")
    elif intent == "reverse":
        items = content.words_unique(rng, _kind(rng), rng.randrange(5, 12))
        f = b.file(b.name("txt", awkward=awk), lines_text(items))
        b.say("reverse", f=show(f), out=show(out))
        b.step(f"sort -r {q(f)} > {q(out)}")
        b.primary(out, lines_text(sorted(items, reverse=True)), "text")
    else:
        base = content.words_unique(rng, _kind(rng), rng.randrange(4, 9))
        items = base + [rng.choice(base) for _ in range(rng.randrange(3, 10))]
        rng.shuffle(items)
        f = b.file(b.name("txt", awkward=awk), lines_text(items))
        if intent == "unique":
            b.say("unique", f=show(f), out=show(out))
            b.step(f"sort -u {q(f)} > {q(out)}")
            b.primary(out, lines_text(sorted(set(items))), "text")
        else:
            b.say("distinct_count", f=show(f), out=show(out))
            b.step(f"sort -u {q(f)} | wc -l > {q(out)}")
            b.primary(out, str(len(set(items))), "strip")
    b.unchanged(f)


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.5)
    out = b.output(b.name("txt", awkward=awk))
    if rng.random() < 0.5:
        base = content.words_unique(rng, _kind(rng), rng.randrange(4, 8))
        counts = sorted(rng.sample(range(1, 12), len(base)), reverse=True)  # distinct counts: one clear winner
        items = [w for w, c in zip(base, counts, strict=True) for _ in range(c)]
        rng.shuffle(items)
        f = b.file(b.name("txt", awkward=awk), lines_text(items))
        b.say("most_common", f=show(f), out=show(out))
        b.step(f"sort {q(f)} | uniq -c | sort -rn | head -n 1")
        b.step(f"echo {base[0]} > {q(out)}")
        b.primary(out, base[0], "strip")
    else:
        k = rng.randrange(2, 5)
        nums = content.distinct_ints(rng, rng.randrange(8, 20), 1, 100000)
        f = b.file(b.name("txt", awkward=awk), lines_text([str(n) for n in nums]))
        b.say("top_n", k=k, f=show(f), out=show(out))
        b.step(f"sort -rn {q(f)} | head -n {k} > {q(out)}")
        b.primary(out, lines_text([str(n) for n in sorted(nums, reverse=True)[:k]]), "text")
    b.unchanged(f)


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    keys = content.words_unique(rng, rng.choice(["fruits", "cities", "people"]), rng.randrange(3, 7))
    rows = [f"{rng.choice(keys)} {rng.randrange(1, 50)}" for _ in range(rng.randrange(10, 25))]
    comments = [f"# {words.sentence(rng, 4)}" for _ in range(rng.randrange(1, 3) + b.knobs.distractors)]
    all_lines = rows + comments
    rng.shuffle(all_lines)
    f = b.file(b.name("txt", awkward=b.awkward(p=0.3)), lines_text(all_lines))
    counts = Counter(r.split()[0] for r in rows)
    out = b.output(b.name("txt"))
    b.say("count_per_key", f=show(f), out=show(out))
    b.step(f"head -n 5 {q(f)}")
    b.step(f"grep -v '^#' {q(f)} | cut -d' ' -f1 | sort | uniq -c | awk '{{print $2, $1}}' > {q(out)}")
    b.primary(out, lines_text([f"{k} {counts[k]}" for k in sorted(counts)]), "text")
    b.unchanged(f)


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    keys = content.words_unique(rng, rng.choice(["people", "services", "cities"]), rng.randrange(4, 9))
    n = rng.randrange(150, 400)
    rows = [(rng.choice(keys), rng.randrange(1, 500)) for _ in range(n)]
    totals = Counter()
    for k, v in rows:
        totals[k] += v
    # make every total distinct so the ranking is unambiguous
    seen: set[int] = set()
    for k in sorted(totals):
        while totals[k] in seen:
            rows.append((k, 1))
            totals[k] += 1
        seen.add(totals[k])
    lines = [f"{k} {v}" for k, v in rows]
    for _ in range(rng.randrange(2, 5) + b.knobs.distractors):
        lines.insert(rng.randrange(len(lines)), f"# {words.sentence(rng, 3)}")
    header = rng.choice(["name amount", "key value", "who units"])
    f = b.file(b.name("log", awkward=b.awkward(p=0.4)), lines_text([header, *lines]))
    out = b.output(b.name("txt"))
    b.say("totals_ranked", f=show(f), header=header, out=show(out))
    b.step(f"head -n 4 {q(f)}")
    b.step(f"tail -n +2 {q(f)} | grep -v '^#' | awk '{{s[$1] += $2}} END {{for (k in s) print k, s[k]}}' "
           f"| sort -k2,2nr > {q(out)}")
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    b.primary(out, lines_text([f"{k} {v}" for k, v in ranked]), "text")
    b.unchanged(f)


# ---- breadth intents (synthesis.breadth): uniq -d, sort -t -k
def _breadth2(b: TaskBuilder) -> None:
    rng = b.rng
    out = b.output(b.name("txt"))
    if rng.random() < 0.5:
        items = words.sample(rng, "fruits", rng.randrange(4, 8))
        twice = rng.sample(items, rng.randrange(1, len(items) - 1))
        lines = [*items, *twice, *rng.sample(twice, rng.randrange(0, len(twice) + 1))]
        rng.shuffle(lines)
        f = b.file(b.name("txt", awkward=b.awkward(2, 0.3)), lines_text(lines))
        b.say("repeated", f=show(f), out=show(out))
        b.step(f"sort {q(f)} | uniq -d > {q(out)}")
        b.primary(out, lines_text(sorted(set(twice))), "text")
    else:
        names = words.sample(rng, "people", rng.randrange(4, 8))
        rows = [f"{n}:{words.pick(rng, 'cities')}:{v}" for n, v in zip(names, content.distinct_ints(rng, len(names), 1, 500), strict=True)]
        f = b.file(b.name("db", awkward=b.awkward(2, 0.3)), lines_text(rows))
        b.say("by_third_field", f=show(f), out=show(out))
        b.step(f"sort -t: -k3,3n {q(f)} > {q(out)}")
        b.primary(out, lines_text(sorted(rows, key=lambda r: int(r.rsplit(":", 1)[1]))), "text")
    b.unchanged(f)


BREADTH = {2: _breadth2}
generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5], BREADTH)
