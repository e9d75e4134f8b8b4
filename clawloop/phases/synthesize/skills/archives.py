"""archives: create, list and unpack tar/gzip archives (starting archives are built at setup)."""

from __future__ import annotations

import random

from clawloop.phases.synthesize import content, words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "archives"
VERSION = 1
LEVELS = {
    1: "one command: pack a folder, unpack an archive here, gzip a file",
    2: "unpack into a new folder, list members, pack only some files, gunzip",
    3: "extract a single member, other compressions (bz2, xz), awkward member names",
    4: "recovery: a .tar.gz that is not gzipped; or unpack + count (with text_search); append to a tar",
    5: "repack without the junk files, or dig a file out of an archive inside an archive",
}


def _text(rng: random.Random) -> str:
    return lines_text([words.sentence(rng) for _ in range(rng.randrange(1, 5))])


def _stage(b: TaskBuilder, folder: str, n: int, ext: str | None = None, awkward: bool = False) -> dict[str, str]:
    """Place `n` files under `folder`; returns member name (relative to folder) -> content."""
    out: dict[str, str] = {}
    for i in range(n):
        rel = b.name(ext or b.rng.choice(["txt", "md", "ini", "csv"]), awkward=awkward and i == 0, folder=folder)
        text = _text(b.rng)
        b.file(rel, text)
        out[rel[len(folder) + 1:]] = text
    return out


def _pack_at_setup(b: TaskBuilder, archive: str, folder: str, members: list[str], flag: str = "z",
                   strip: bool = False) -> None:
    """Build `archive` from the staged folder at setup, then delete the staging folder.
    Members are listed explicitly so the member order (and `tar -t` output) is fixed."""
    if strip:
        b.run_setup(f"tar -c{flag}f {q(archive)} -C {q(folder)} {' '.join(q(m) for m in members)} && rm -r {q(folder)}")
    else:
        paths = " ".join(q(f"{folder}/{m}") for m in members)
        b.run_setup(f"tar -c{flag}f {q(archive)} {paths} && rm -r {q(folder)}")


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward()
    intent = rng.choice(["pack", "unpack", "gzip"])
    if intent == "pack":
        d = b.dirname(awkward=awk)
        members = _stage(b, d, rng.randrange(2, 5))
        out = b.output(b.name("tar.gz", stem=d if rng.random() < 0.5 and not awk else None))
        b.say("pack", d=show(d), out=show(out))
        b.step(f"tar -czf {q(out)} {q(d)}")
        b.expect_archive(out, {f"{d}/{m}": t for m, t in members.items()})
    elif intent == "unpack":
        d = b.dirname(awkward=awk)
        members = _stage(b, d, rng.randrange(2, 5))
        a = b.name("tar.gz", stem=d if not awk else None)
        _pack_at_setup(b, a, d, sorted(members))
        b.say("unpack", a=show(a))
        b.step(f"tar -xzf {q(a)}")
        b.expect_tree(d, members)
    else:
        f = b.file(b.name(rng.choice(["log", "txt", "csv"]), awkward=awk),
                   lines_text(content.log_lines(rng, rng.randrange(5, 20))))
        text = b.files[f"/workspace/{f}"].content
        b.say("gzip", f=show(f), gz=show(f + ".gz"))
        b.step(f"gzip {q(f)}")
        b.expect_gz(f + ".gz", text)
        b.expect_absent(f)


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(2, 0.3)
    intent = rng.choice(["into_dir", "list", "pack_some", "gunzip"])
    if intent in ("into_dir", "list"):
        stage = b.dirname()
        # tar -t escapes non-ASCII names under LC_ALL=C, so listed members stay plain
        members = _stage(b, stage, rng.randrange(2, 6), awkward=awk and intent == "into_dir")
        order = list(members)
        rng.shuffle(order)
        a = b.name("tar.gz")
        _pack_at_setup(b, a, stage, order, strip=True)
        b.used.discard(stage.lower())
        if intent == "into_dir":
            dest = b.dirname(awkward=awk)
            b.say("into_dir", a=show(a), dest=show(dest))
            b.step(f"mkdir {q(dest)}")
            b.step(f"tar -xzf {q(a)} -C {q(dest)}")
            b.expect_tree(dest, members)
        else:
            out = b.output(b.name("txt"))
            b.say("list", a=show(a), out=show(out))
            b.step(f"tar -tzf {q(a)} > {q(out)}")
            b.primary(out, lines_text(order), "text")
    elif intent == "pack_some":
        ext = rng.choice(["txt", "md", "csv"])
        want = {}
        for i in range(rng.randrange(2, 5)):
            rel = b.file(b.name(ext, awkward=awk and i == 0), _text(rng))
            want[rel] = b.files[f"/workspace/{rel}"].content
        for _ in range(b.distractor_count(2)):
            b.file(b.name(rng.choice([e for e in ("log", "ini", "json") if e != ext])), _text(rng))
        out = b.output(b.name("tar.gz"))
        b.say("pack_some", ext=ext, out=show(out))
        b.step(f"tar -czf {q(out)} *.{ext}")
        b.expect_archive(out, want)
    else:
        f = b.name(rng.choice(["txt", "csv", "log"]), awkward=awk)
        text = _text(rng)
        b.file(f, text)
        b.run_setup(f"gzip {q(f)}")
        b.say("gunzip", gz=show(f + ".gz"))
        b.step(f"gunzip {q(f + '.gz')}")
        b.expect_file(f, text, "exact")
        b.expect_absent(f + ".gz")


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.5)
    d = b.dirname()
    members = _stage(b, d, rng.randrange(3, 6) + b.knobs.distractors, awkward=awk)
    if rng.random() < 0.5:
        a = b.name("tar.gz")
        _pack_at_setup(b, a, d, sorted(members))
        pick = rng.choice(sorted(members))
        b.say("one_member", a=show(a), m=show(f"{d}/{pick}"))
        b.step(f"tar -tzf {q(a)}")
        b.step(f"tar -xzf {q(a)} {q(d + '/' + pick)}")
        b.expect_file(f"{d}/{pick}", members[pick], "exact")
        for m in members:
            if m != pick:
                b.expect_absent(f"{d}/{m}")
    else:
        flag, ext = rng.choice([("j", "tar.bz2"), ("J", "tar.xz")])
        b.tag("needs:bzip2" if flag == "j" else "needs:xz")
        a = b.name(ext)
        _pack_at_setup(b, a, d, sorted(members), flag=flag, strip=True)
        b.used.discard(d.lower())
        dest = b.dirname(awkward=awk)
        b.say("other_format", a=show(a), dest=show(dest))
        b.step(f"mkdir {q(dest)}")
        b.step(f"tar -x{flag}f {q(a)} -C {q(dest)}")
        b.expect_tree(dest, members)


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    intent = rng.choice(["fake_gz", "count_inside", "append"])
    d = b.dirname()
    if intent == "fake_gz":
        members = _stage(b, d, rng.randrange(2, 5), awkward=b.awkward(p=0.4))
        a = b.name("tar.gz")
        _pack_at_setup(b, a, d, sorted(members), flag="", strip=True)  # plain tar, misleading name
        b.used.discard(d.lower())
        dest = b.dirname()
        b.say("fake_gz", a=show(a), dest=show(dest))
        b.step(f"mkdir {q(dest)}")
        b.step(f"tar -tvf {q(a)}")
        b.step(f"tar -xf {q(a)} -C {q(dest)}")
        b.expect_tree(dest, members)
    elif intent == "count_inside":
        level = rng.choice(["ERROR", "WARN"])
        total = 0
        names = []
        for i in range(rng.randrange(2, 5)):
            lines = content.log_lines(rng, rng.randrange(4, 12))
            total += sum(level in ln for ln in lines)
            names.append(b.file(b.name("log", awkward=b.awkward(p=0.3) and i == 0, folder=d), lines_text(lines)))
        a = b.name("tar.gz", stem=rng.choice(["logs", "weekly_logs", "server_logs"]) + f"_{rng.randrange(10, 99)}")
        _pack_at_setup(b, a, d, [n.split("/", 1)[1] for n in names])
        out = b.output(b.name("txt"))
        b.say("count_inside", a=show(a), word=level, out=show(out))
        b.step(f"tar -xzf {q(a)}")
        b.step(f"ls {q(d)}")
        b.step(f"cat {q(d)}/*.log | grep -c {level} > {q(out)}")
        b.primary(out, str(total), "strip")
    else:
        members = _stage(b, d, rng.randrange(2, 4))
        a = b.name("tar")
        _pack_at_setup(b, a, d, sorted(members), flag="", strip=True)
        b.used.discard(d.lower())
        extra = b.file(b.name("txt", awkward=b.awkward(p=0.4)), _text(rng))
        b.say("append", a=show(a), f=show(extra))
        b.step(f"tar -tf {q(a)}")
        b.step(f"tar -rf {q(a)} {q(extra)}")
        b.expect_archive(a, {**members, extra: b.files[f"/workspace/{extra}"].content})
        b.unchanged(extra)


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    d = b.dirname(awkward=b.awkward(p=0.3))
    if rng.random() < 0.5:
        keep = _stage(b, d, rng.randrange(2, 5), awkward=b.awkward(p=0.5))
        junk = []
        for i in range(rng.randrange(2, 4) + b.knobs.distractors):
            rel = b.file(b.name("tmp", awkward=i == 0, folder=d), "scratch\n")
            junk.append(rel.split("/", 1)[1])
        a = b.name("tar.gz")
        _pack_at_setup(b, a, d, sorted([*keep, *junk]))
        out = b.output(b.name("tar.gz", stem=f"{rng.choice(['clean', 'tidy', 'release'])}_{rng.randrange(10, 99)}"))
        b.say("repack", a=show(a), out=show(out), d=show(d))
        b.step(f"tar -xzf {q(a)}")
        b.step(f"rm {q(d)}/*.tmp")
        b.step(f"tar -czf {q(out)} {q(d)}")
        b.expect_archive(out, {f"{d}/{m}": t for m, t in keep.items()})
    else:
        inner_dir = b.dirname()
        members = _stage(b, inner_dir, rng.randrange(2, 5))
        target = rng.choice(sorted(members))
        inner = b.name("tar.gz", stem=f"inner_{rng.randrange(10, 99)}")
        _pack_at_setup(b, inner, inner_dir, sorted(members))
        readme = b.file(b.name("txt", stem="README"), f"The data is in {inner}.\n")
        a = b.name("tar.gz", stem=f"bundle_{words.pick(rng, 'nouns')}")
        b.run_setup(f"tar -czf {q(a)} {q(inner)} {q(readme)} && rm {q(inner)} {q(readme)}")
        work = b.dirname()
        out = b.output(b.name(target.rsplit(".", 1)[1]))
        b.say("nested", a=show(a), m=show(target), out=show(out), work=show(work))
        b.step(f"mkdir {q(work)}")
        b.step(f"tar -xzf {q(a)} -C {q(work)}")
        b.step(f"tar -xzf {q(work + '/' + inner)} -C {q(work)}")
        b.step(f"cp {q(work + '/' + inner_dir + '/' + target)} {q(out)}")
        b.primary(out, members[target], "exact")


# ---- breadth intents (synthesis.breadth): zcat, tar -tzf without unpacking
def _breadth1(b: TaskBuilder) -> None:
    rng = b.rng
    f = b.name("log", awkward=b.awkward())
    text = lines_text(content.log_lines(rng, rng.randrange(3, 7)))
    b.file(f, text)
    b.run_setup(f"gzip {q(f)}")
    out = b.output(b.name("txt"))
    b.say("read_gz", gz=show(f + ".gz"), out=show(out))
    b.step(f"zcat {q(f + '.gz')} > {q(out)}")
    b.primary(out, text, "exact")
    b.expect_gz(f + ".gz", text)


BREADTH = {1: _breadth1}
generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5], BREADTH)
