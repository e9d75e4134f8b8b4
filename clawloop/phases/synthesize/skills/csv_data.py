"""csv: header, columns, filters, sorting and aggregation of comma-separated tables."""

from __future__ import annotations

import random
from collections import defaultdict

from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "csv"
VERSION = 1
LEVELS = {
    1: "one command: the header line, a whole column, or the number of data rows",
    2: "a column without its header, the sum of a column, rows with a given value",
    3: "numeric filters and sorts that keep the header; distinct values; awkward names",
    4: "recovery: CRLF endings before arithmetic; or join two tables on an id (composition)",
    5: "group-by totals over hundreds of rows written with a header line",
}

def _table(rng: random.Random, n: int) -> tuple[list[str], list[list[str]]]:
    """A table with id, name and 2-3 more columns, and `n` rows."""
    cols = ["id", "name", *rng.sample(["city", "score", "age", "team", "amount"], rng.randrange(2, 4))]
    rng.shuffle(cols)
    names = words.sample(rng, "people", n)
    # numeric columns never tie, so any numeric sort has exactly one right answer
    distinct = {c: rng.sample(range(1, 1000), n) for c in ("score", "amount")}
    distinct["age"] = rng.sample(range(18, 90), n)
    rows = []
    for i in range(n):
        row = []
        for c in cols:
            if c == "id":
                row.append(str(100 + i))
            elif c == "name":
                row.append(names[i])
            elif c == "city":
                row.append(words.pick(rng, "cities"))
            elif c == "team":
                row.append(rng.choice(["red", "blue", "green", "gold"]))
            elif c == "age":
                row.append(str(distinct["age"][i]))
            else:
                row.append(str(distinct[c][i]))
        rows.append(row)
    return cols, rows


def _csv(cols: list[str], rows: list[list[str]], eol: str = "\n") -> str:
    return "".join(",".join(r) + eol for r in [cols, *rows])


def _numeric_col(rng: random.Random, cols: list[str]) -> tuple[str, int]:
    """A numeric column's name and index."""
    col = rng.choice([c for c in cols if c in ("score", "amount", "age", "id")])
    return col, cols.index(col)


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    cols, rows = _table(rng, rng.randrange(3, 12))
    f = b.file(b.name("csv", awkward=b.awkward()), _csv(cols, rows))
    out = b.output(b.name("txt"))
    intent = rng.choice(["header", "column", "rows"])
    if intent == "header":
        b.say("header", f=show(f), out=show(out))
        b.step(f"head -n 1 {q(f)} > {q(out)}")
        b.primary(out, ",".join(cols), "text")
    elif intent == "column":
        i = rng.randrange(len(cols))
        b.say("column", col=cols[i], n=i + 1, f=show(f), out=show(out))
        b.step(f"cut -d, -f{i + 1} {q(f)} > {q(out)}")
        b.primary(out, lines_text([cols[i], *(r[i] for r in rows)]), "text")
    else:
        b.say("rows", f=show(f), out=show(out))
        b.step(f"tail -n +2 {q(f)} | wc -l > {q(out)}")
        b.primary(out, str(len(rows)), "strip")
    b.unchanged(f)


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    cols, rows = _table(rng, rng.randrange(4, 14))
    f = b.file(b.name("csv", awkward=b.awkward(2, 0.3)), _csv(cols, rows))
    out = b.output(b.name("txt"))
    intent = rng.choice(["values", "sum", "match"])
    if intent == "values":
        i = rng.randrange(len(cols))
        b.say("values", col=cols[i], f=show(f), out=show(out))
        b.step(f"head -n 1 {q(f)}")
        b.step(f"tail -n +2 {q(f)} | cut -d, -f{i + 1} > {q(out)}")
        b.primary(out, lines_text([r[i] for r in rows]), "text")
    elif intent == "sum":
        col, i = _numeric_col(rng, cols)
        b.say("sum", col=col, f=show(f), out=show(out))
        b.step(f"head -n 1 {q(f)}")
        b.step(f"awk -F, 'NR > 1 {{s += ${i + 1}}} END {{print s}}' {q(f)} > {q(out)}")
        b.primary(out, str(sum(int(r[i]) for r in rows)), "strip")
    else:
        col = rng.choice([c for c in cols if c in ("city", "team")] or ["name"])
        i = cols.index(col)
        value = rng.choice(rows)[i]
        b.say("match", col=col, value=value, f=show(f), out=show(out))
        b.step(f"head -n 1 {q(f)}")
        b.step(f"awk -F, '${i + 1} == \"{value}\"' {q(f)} > {q(out)}")
        b.primary(out, lines_text([",".join(r) for r in rows if r[i] == value]), "text")
    b.unchanged(f)


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    cols, rows = _table(rng, rng.randrange(6, 18))
    f = b.file(b.name("csv", awkward=b.awkward(p=0.5)), _csv(cols, rows))
    for _ in range(b.knobs.distractors):
        b.file(b.name("csv", stem=f"{f.rsplit('.', 1)[0]}_old"), _csv(cols, rows[:2]))
    out = b.output(b.name("csv"))
    intent = rng.choice(["filter", "sort", "distinct"])
    if intent == "filter":
        col, i = _numeric_col(rng, cols)
        limit = sorted(int(r[i]) for r in rows)[len(rows) // 2]
        b.say("filter", col=col, limit=limit, f=show(f), out=show(out))
        b.step(f"head -n 1 {q(f)}")
        b.step(f"awk -F, 'NR == 1 || ${i + 1} > {limit}' {q(f)} > {q(out)}")
        keep = [r for r in rows if int(r[i]) > limit]
        b.primary(out, _csv(cols, keep), "text")
    elif intent == "sort":
        col, i = _numeric_col(rng, cols)
        b.say("sort", col=col, f=show(f), out=show(out))
        b.step(f"head -n 1 {q(f)} > {q(out)}")
        b.step(f"tail -n +2 {q(f)} | sort -t, -k{i + 1},{i + 1}n >> {q(out)}")
        b.primary(out, _csv(cols, sorted(rows, key=lambda r: int(r[i]))), "text")
    else:
        col = rng.choice([c for c in cols if c in ("city", "team")] or ["name"])
        i = cols.index(col)
        b.say("distinct", col=col, f=show(f), out=show(out))
        b.step(f"head -n 1 {q(f)}")
        b.step(f"tail -n +2 {q(f)} | cut -d, -f{i + 1} | sort -u > {q(out)}")
        b.primary(out, lines_text(sorted({r[i] for r in rows})), "text")
    b.unchanged(f)


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    if rng.random() < 0.5:
        # broken start: CRLF endings make awk see "12\r"; the sum still works but matching does not,
        # so the task asks for a cleaned copy plus a figure computed on it
        cols, rows = _table(rng, rng.randrange(5, 14))
        col, i = _numeric_col(rng, cols)
        f = b.file(b.name("csv", awkward=b.awkward(p=0.4)), _csv(cols, rows, "\r\n"))
        clean = b.name("csv", stem=f"{f.rsplit('.', 1)[0].replace(' ', '_')}_unix")
        out = b.output(b.name("txt"))
        b.say("crlf_max", f=show(f), clean=show(clean), col=col, out=show(out))
        b.step(f"cat -A {q(f)} | head -n 3")
        b.step(f"tr -d '\\r' < {q(f)} > {q(clean)}")
        b.step(f"tail -n +2 {q(clean)} | cut -d, -f{i + 1} | sort -n | tail -n 1 > {q(out)}")
        b.expect_file(clean, _csv(cols, rows), "exact")
        b.primary(out, str(max(int(r[i]) for r in rows)), "strip")
    else:
        people = words.sample(rng, "people", rng.randrange(4, 9))
        ids = rng.sample(range(10, 99), len(people))
        scores = {i: rng.randrange(1, 100) for i in ids if rng.random() < 0.8} or {ids[0]: 7}
        a = b.file(b.name("csv", stem="people" if rng.random() < 0.5 else None),
                   _csv(["id", "name"], [[str(i), p] for i, p in zip(ids, people, strict=True)]))
        s_rows = [[str(i), str(v)] for i, v in scores.items()]
        rng.shuffle(s_rows)
        s = b.file(b.name("csv", stem="scores" if rng.random() < 0.5 else None), _csv(["id", "score"], s_rows))
        out = b.output(b.name("csv"))
        names = dict(zip(ids, people, strict=True))
        b.say("join", a=show(a), s=show(s), out=show(out))
        b.step(f"head -n 3 {q(a)} {q(s)}")
        b.step(f"awk -F, 'NR == FNR {{n[$1] = $2; next}} FNR > 1 {{print n[$1] \",\" $2}}' {q(a)} {q(s)} "
               f"| sort > {q(out)}")
        b.primary(out, lines_text(sorted(f"{names[i]},{v}" for i, v in scores.items())), "text")


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    key = rng.choice(["city", "team", "region"])
    keys = (words.sample(rng, "cities", rng.randrange(3, 7)) if key != "team"
            else ["red", "blue", "green", "gold", "silver"][: rng.randrange(3, 6)])
    rows = [[str(1000 + i), rng.choice(keys), str(rng.randrange(1, 300))] for i in range(rng.randrange(120, 300))]
    f = b.file(b.name("csv", awkward=b.awkward(p=0.4)), _csv(["id", key, "amount"], rows))
    totals: dict[str, int] = defaultdict(int)
    for r in rows:
        totals[r[1]] += int(r[2])
    out = b.output(b.name("csv", stem=f"totals_by_{key}" if rng.random() < 0.5 else None))
    b.say("group_totals", key=key, f=show(f), out=show(out))
    b.step(f"head -n 3 {q(f)}")
    b.step(f"echo '{key},total' > {q(out)}")
    b.step(f"awk -F, 'NR > 1 {{s[$2] += $3}} END {{for (k in s) print k \",\" s[k]}}' {q(f)} | sort >> {q(out)}")
    b.primary(out, lines_text([f"{key},total", *(f"{k},{totals[k]}" for k in sorted(totals))]), "text")
    b.unchanged(f)


generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5])
