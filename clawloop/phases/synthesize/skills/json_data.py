"""json: read, filter, change and aggregate JSON documents with jq."""

from __future__ import annotations

import json
import random
from collections import defaultdict

from clawloop.config.knobs import Knobs
from clawloop.core.tasks.task import Task
from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.builder import TaskBuilder, lines_text, q, show

NAME = "json"
VERSION = 1
LEVELS = {
    1: "one jq call: the value of a top-level field",
    2: "nested field, array length or the list of keys",
    3: "select array items by a condition; awkward file names and decoy fields",
    4: "change a value and write valid JSON back (temp file + move), or JSON to CSV lines (with csv)",
    5: "aggregate a larger array (sum per group into an object, or a total), look before acting",
}


def _dump(obj: object) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def _config(rng: random.Random) -> dict[str, object]:
    cfg: dict[str, object] = {
        "name": f"{words.pick(rng, 'adjectives')}-{words.pick(rng, 'nouns')}",
        "owner": words.pick(rng, "people"),
        "version": f"{rng.randrange(0, 5)}.{rng.randrange(0, 20)}.{rng.randrange(0, 10)}",
        "port": rng.randrange(1024, 65000),
        "region": words.pick(rng, "cities"),
        "enabled": rng.choice([True, False]),
    }
    keys = list(cfg)
    rng.shuffle(keys)
    return {k: cfg[k] for k in keys[: rng.randrange(4, 7)]}


def _items(rng: random.Random, n: int) -> list[dict[str, object]]:
    names = words.sample(rng, rng.choice(["fruits", "nouns"]), n)
    return [{"name": nm, "price": rng.randrange(1, 100), "qty": rng.randrange(0, 40),
             "active": rng.choice([True, False])} for nm in names]


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    cfg = _config(rng)
    key = rng.choice(sorted(k for k, v in cfg.items() if not isinstance(v, bool)))
    f = b.file(b.name("json", awkward=b.awkward(), stem=rng.choice(["config", "settings", "app", None])),
               _dump(cfg))
    out = b.output(b.name("txt", stem=f"{key}_value" if rng.random() < 0.5 else None))
    b.say("field", key=key, f=show(f), out=show(out))
    b.step(f"jq -r .{key} {q(f)} > {q(out)}")
    b.primary(out, str(cfg[key]), "strip")
    b.unchanged(f)


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(2, 0.3)
    intent = rng.choice(["nested", "length", "keys"])
    out = b.output(b.name("txt"))
    if intent == "nested":
        section = rng.choice(["database", "server", "cache", "storage"])
        inner = {"host": f"{words.pick(rng, 'services')}.{words.pick(rng, 'cities')}.internal",
                 "port": rng.randrange(1024, 65000), "user": words.pick(rng, "people")}
        doc = {"name": words.pick(rng, "nouns"), section: inner, "debug": False}
        field = rng.choice(sorted(inner))
        f = b.file(b.name("json", awkward=awk), _dump(doc))
        b.say("nested", path=f"{section}.{field}", f=show(f), out=show(out))
        b.step(f"jq -r .{section}.{field} {q(f)} > {q(out)}")
        b.primary(out, str(inner[field]), "strip")
    elif intent == "length":
        arr = rng.choice(["items", "users", "tasks", "entries"])
        doc = {arr: [{"id": i, "name": w} for i, w in enumerate(words.sample(rng, "nouns", rng.randrange(3, 15)))]}
        f = b.file(b.name("json", awkward=awk), _dump(doc))
        b.say("length", arr=arr, f=show(f), out=show(out))
        b.step(f"jq '.{arr} | length' {q(f)} > {q(out)}")
        b.primary(out, str(len(doc[arr])), "strip")
    else:
        doc = _config(rng)
        f = b.file(b.name("json", awkward=awk), _dump(doc))
        b.say("keys", f=show(f), out=show(out))
        b.step(f"jq -r 'keys[]' {q(f)} > {q(out)}")
        b.primary(out, lines_text(sorted(doc)), "text")
    b.unchanged(f)


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    items = _items(rng, rng.randrange(5, 12))
    for it in items[: b.knobs.distractors]:
        it["old_price"] = rng.randrange(100, 200)  # decoy field with a similar name
    f = b.file(b.name("json", awkward=b.awkward(p=0.5)), _dump(items))
    out = b.output(b.name("txt"))
    if rng.random() < 0.5:
        limit = sorted(int(it["price"]) for it in items)[len(items) // 2]  # about half qualify
        b.say("select_price", limit=limit, f=show(f), out=show(out))
        b.step(f"jq '.[0]' {q(f)}")
        b.step(f"jq -r '.[] | select(.price > {limit}) | .name' {q(f)} > {q(out)}")
        b.primary(out, lines_text([str(it["name"]) for it in items if int(it["price"]) > limit]), "text")
    else:
        if all(it["active"] for it in items):
            items[0]["active"] = False
            b.file(f, _dump(items))
        b.say("count_active", f=show(f), out=show(out))
        b.step(f"jq '.[0]' {q(f)}")
        b.step(f"jq '[.[] | select(.active)] | length' {q(f)} > {q(out)}")
        b.primary(out, str(sum(bool(it["active"]) for it in items)), "strip")
    b.unchanged(f)


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.4)
    if rng.random() < 0.5:
        cfg = _config(rng)
        key = rng.choice(["version", "owner", "region", "name"])
        new = (f"{rng.randrange(5, 9)}.{rng.randrange(0, 9)}.0" if key == "version"
               else f"{words.pick(rng, 'people')}_{rng.randrange(10, 99)}")
        f = b.file(b.name("json", awkward=awk), _dump(cfg))
        tmp = b.name("json", stem="tmp")
        b.say("set_field", key=key, value=new, f=show(f))
        b.step(f"jq '.{key} = \"{new}\"' {q(f)} > {tmp}")
        b.step(f"mv {tmp} {q(f)}")
        b.expect_file(f, json.dumps({**cfg, key: new}), "json")  # type: ignore[dict-item]
    else:
        items = _items(rng, rng.randrange(4, 9))
        f = b.file(b.name("json", awkward=awk), _dump(items))
        out = b.output(b.name("csv"))
        b.say("to_csv", f=show(f), out=show(out))
        b.step(f"jq '.[0]' {q(f)}")
        b.step(f"jq -r '.[] | \"\\(.name),\\(.qty)\"' {q(f)} > {q(out)}")
        b.primary(out, lines_text([f"{it['name']},{it['qty']}" for it in items]), "text")
        b.unchanged(f)


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    teams = words.sample(rng, rng.choice(["cities", "fruits"]), rng.randrange(3, 6))
    people = words.words("people")
    rows = [{"who": rng.choice(people), "team": rng.choice(teams), "hours": rng.randrange(1, 12)}
            for _ in range(rng.randrange(30, 90))]
    f = b.file(b.name("json", awkward=b.awkward(p=0.4)), _dump({"generated": "2024-03-01", "entries": rows}))
    if rng.random() < 0.5:
        totals: dict[str, int] = defaultdict(int)
        for r in rows:
            totals[str(r["team"])] += int(r["hours"])
        out = b.output(b.name("json", stem="totals" if rng.random() < 0.5 else None))
        b.say("group_sum", f=show(f), out=show(out))
        b.step(f"jq 'keys' {q(f)}")
        b.step(f"jq '.entries[0]' {q(f)}")
        b.step(f"jq '.entries | group_by(.team) | map({{key: .[0].team, value: (map(.hours) | add)}}) "
               f"| from_entries' {q(f)} > {q(out)}")
        b.primary(out, json.dumps(dict(totals)), "json")
    else:
        team = rng.choice(teams)
        if not any(r["team"] == team for r in rows):
            rows[0]["team"] = team
            b.file(f, _dump({"generated": "2024-03-01", "entries": rows}))
        out = b.output(b.name("txt"))
        b.say("team_total", team=team, f=show(f), out=show(out))
        b.step(f"jq '.entries[0]' {q(f)}")
        b.step(f"jq '[.entries[] | select(.team == \"{team}\") | .hours] | add' {q(f)} > {q(out)}")
        b.primary(out, str(sum(int(r["hours"]) for r in rows if r["team"] == team)), "strip")
    b.unchanged(f)


_LEVELS = {1: _level1, 2: _level2, 3: _level3, 4: _level4, 5: _level5}


def generate(level: int, rng: random.Random, knobs: Knobs, answer_rng: random.Random | None = None) -> Task:
    b = TaskBuilder(NAME, VERSION, level, rng, knobs, answer_rng)
    b.tag("needs:jq")  # not in every image (bookworm-slim lacks it)
    _LEVELS[level](b)
    return b.build()


