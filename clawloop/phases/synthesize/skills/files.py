"""files: create, copy, move, rename and delete files and folders."""

from __future__ import annotations

import hashlib
import random

from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "files"
VERSION = 1
LEVELS = {
    1: "one command: copy, rename, delete a file, make a folder or write a one-line file",
    2: "two steps: make a folder then move/copy into it; a bystander file must survive",
    3: "glob over several files with distractors that must stay; awkward names likely",
    4: "recovery: a plain file blocks the folder name; or copy + make executable (with permissions)",
    5: "sort a mixed inbox into subfolders by type and drop empty files; awkward names, many files",
}


def _text(rng: random.Random, n: int | None = None) -> str:
    return lines_text([words.sentence(rng) for _ in range(n or rng.randrange(2, 6))])


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward()
    intent = rng.choice(["copy", "rename", "delete", "mkdir", "write"])
    if intent in ("copy", "rename"):
        src = b.file(b.name(rng.choice(["txt", "md", "cfg"]), awkward=awk), _text(rng))
        content = b.files[f"/workspace/{src}"].content
        dst = b.output(b.name(src.rsplit(".", 1)[1], awkward=awk))
        b.say(intent, src=show(src), dst=show(dst))
        b.step(f"{'cp' if intent == 'copy' else 'mv'} {q(src)} {q(dst)}")
        b.primary(dst, content, "exact")
        if intent == "copy":
            b.unchanged(src)
        else:
            b.expect_absent(src)
    elif intent == "delete":
        victim = b.file(b.name(rng.choice(["tmp", "bak", "log", "old"]), awkward=awk), _text(rng))
        keep = b.file(b.name("txt"), _text(rng))
        b.say("delete", f=show(victim))
        b.step(f"rm {q(victim)}")
        b.expect_absent(victim)
        b.unchanged(keep)
    elif intent == "mkdir":
        d = b.dirname(awkward=awk)
        b.say("mkdir", d=show(d))
        b.step(f"mkdir {q(d)}")
        b.expect_dir(d)
    else:
        dst = b.output(b.name("txt", awkward=awk))
        line = words.sentence(rng, rng.randrange(2, 5))
        b.say("write", dst=show(dst), text=line)
        b.step(f"echo {q(line)} > {q(dst)}")
        b.primary(dst, line + "\n", "text")


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(from_level=2, p=0.3)
    f = b.file(b.name(rng.choice(["txt", "csv", "md"]), awkward=awk), _text(rng))
    content = b.files[f"/workspace/{f}"].content
    for _ in range(b.distractor_count(1)):
        b.unchanged(b.file(b.name(f.rsplit(".", 1)[1]), _text(rng)))
    if rng.random() < 0.5:
        d = b.dirname(awkward=awk)
        b.say("move_into_new", f=show(f), d=show(d))
        b.step(f"mkdir {q(d)}")
        b.step(f"mv {q(f)} {q(d)}/")
        b.expect_file(f"{d}/{f}", content, "exact")
        b.expect_absent(f)
    else:
        d1, d2 = b.dirname(), b.dirname()
        b.say("copy_nested", f=show(f), d=show(f"{d1}/{d2}"))
        b.step(f"mkdir -p {q(d1 + '/' + d2)}")
        b.step(f"cp {q(f)} {q(d1 + '/' + d2)}/")
        b.primary(f"{d1}/{d2}/{f}", content, "exact")
        b.unchanged(f)


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.6)
    ext = rng.choice(["md", "tmp", "png", "bak", "draft"])
    targets = [b.file(b.name(ext, awkward=awk and i % 2 == 0), _text(rng)) for i in range(rng.randrange(2, 5))]
    others = [b.file(b.name(rng.choice(["txt", "csv", "cfg"])), _text(rng))
              for _ in range(b.distractor_count(2))]
    # near misses: the extension inside the name, or followed by more
    others.append(b.file(b.name(f"{ext}.orig"), _text(rng)))
    others.append(b.file(b.name("txt", stem=f"{ext}_{words.pick(rng, 'nouns')}"), _text(rng)))
    if rng.random() < 0.5:
        d = b.dirname(awkward=awk)
        b.say("move_glob", ext=ext, d=show(d))
        b.step(f"mkdir {q(d)}")
        b.step(f"mv *.{ext} {q(d)}/")
        b.expect_tree(d, {t: b.files[f"/workspace/{t}"].content for t in targets})
    else:
        b.say("delete_glob", ext=ext)
        b.step("ls")
        b.step(f"rm -- *.{ext}")
    b.expect_absent(*targets)
    b.unchanged(*others)


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.5)
    if rng.random() < 0.5:
        # broken start: the folder's name is taken by a stale plain file
        d = b.dirname()
        stale = _text(rng, 2)
        b.file(d, stale)
        srcs = [b.file(b.name(rng.choice(["conf", "ini"]), awkward=awk), _text(rng)) for _ in range(2)]
        b.say("blocked_dir", d=show(d), a=show(srcs[0]), b=show(srcs[1]), old=show(d + ".old"))
        b.step(f"ls -l {q(d)}")
        b.step(f"mv {q(d)} {q(d + '.old')}")
        b.step(f"mkdir {q(d)}")
        b.step(f"cp {q(srcs[0])} {q(srcs[1])} {q(d)}/")
        b.expect_tree(d, {s: b.files[f"/workspace/{s}"].content for s in srcs})
        b.expect_file(d + ".old", stale, "exact")
        b.unchanged(*srcs)
    else:
        # composition with permissions: install a script copy and make it runnable
        script = b.file(b.name("sh", awkward=awk), f"#!/bin/bash\necho {words.sentence(rng, 3)}\n")
        d = b.reserve(rng.choice(["bin", "tools", "scripts"]))
        b.say("install_script", s=show(script), d=show(d))
        b.step(f"mkdir -p {d}")
        b.step(f"cp {q(script)} {d}/")
        b.step(f"chmod +x {q(d + '/' + script)}")
        b.expect_file(f"{d}/{script}", b.files[f"/workspace/{script}"].content, "exact")
        b.expect_run(f"test -x {q(d + '/' + script)}")
        b.unchanged(script)


_KINDS = {"txt": "text", "csv": "data", "log": "logs", "md": "docs", "json": "config"}


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    inbox = b.dirname(awkward=b.knobs.names_with_spaces)
    kinds = rng.sample(sorted(_KINDS), 3)
    expected: dict[str, str] = {}
    for ext in kinds:
        for i in range(rng.randrange(2, 4)):
            n = b.name(ext, awkward=i == 0, folder=inbox)
            content = _text(rng)
            b.file(n, content)
            expected[f"{_KINDS[ext]}/{n.split('/', 1)[1]}"] = content
    for ext in rng.sample(kinds, 2) + [kinds[0]] * b.knobs.distractors:
        b.file(b.name(ext, folder=inbox), "")
    b.say("sort_inbox", inbox=show(inbox),
          rules=", ".join(f".{e} files into {_KINDS[e]}/" for e in kinds))
    b.step(f"find {q(inbox)} -maxdepth 1 -type f -empty -delete")
    b.step(f"mkdir {' '.join(q(inbox + '/' + _KINDS[e]) for e in kinds)}")
    for e in kinds:
        b.step(f"mv {q(inbox)}/*.{e} {q(inbox + '/' + _KINDS[e])}/")
    b.expect_tree(inbox, expected)


# ---- breadth intents (synthesis.breadth): touch, rm -r, md5sum, cp -a, duplicate checksums
def _breadth1(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward()
    intent = rng.choice(["touch", "rm_tree", "checksum"])
    if intent == "touch":
        f = b.name(rng.choice(["lock", "flag", "txt", "done"]), awkward=awk)
        b.say("touch", f=show(f))
        b.step(f"touch {q(f)}")
        b.expect_file(f, "", "exact")
    elif intent == "rm_tree":
        d = b.dirname(awkward=awk)
        for _ in range(rng.randrange(2, 5)):
            b.file(b.name("txt", folder=rng.choice([d, f"{d}/{words.pick(rng, 'nouns')}"])), _text(rng))
        keep = b.file(b.name("txt"), _text(rng))
        b.say("rm_tree", d=show(d))
        b.step(f"rm -r {q(d)}")
        b.expect_absent(d)
        b.unchanged(keep)
    else:
        f = b.file(b.name(rng.choice(["iso", "bin", "txt"]), awkward=awk), _text(rng))
        out = b.output(b.name("md5"))
        digest = hashlib.md5(b.files[f"/workspace/{f}"].data()).hexdigest()
        b.say("checksum", f=show(f), out=show(out))
        b.step(f"md5sum {q(f)} | cut -d' ' -f1 > {q(out)}")
        b.primary(out, digest, "strip")


def _breadth2(b: TaskBuilder) -> None:
    rng = b.rng
    if rng.random() < 0.5:
        src = b.dirname(awkward=b.awkward(2, 0.3))
        want: dict[str, str | None] = {}
        for i in range(rng.randrange(2, 5)):
            mode = 0o755 if i == 0 else rng.choice([0o644, 0o600])
            rel = b.file(b.name("sh" if i == 0 else "txt", folder=src), _text(rng), mode=mode)
            want[rel.split("/", 1)[1]] = b.files[f"/workspace/{rel}"].content
        dst = b.dirname()
        b.say("copy_tree", src=show(src), dst=show(dst))
        b.step(f"cp -a {q(src)} {q(dst)}")
        b.expect_tree(dst, want)
        for rel in want:
            b.expect_mode(f"{dst}/{rel}", b.files[f"/workspace/{src}/{rel}"].mode)
        return
    d = b.dirname(awkward=b.awkward(2, 0.3))
    texts = [_text(rng) for _ in range(rng.randrange(2, 4))]
    bodies = [*texts, *rng.sample(texts, rng.randrange(1, len(texts) + 1))]
    rng.shuffle(bodies)
    for body in bodies:
        b.file(b.name("txt", folder=d), body)
    sums = [hashlib.md5(t.encode()).hexdigest() for t in bodies]
    dup = sorted({s for s in sums if sums.count(s) > 1})
    out = b.output(b.name("txt"))
    b.say("same_checksum", d=show(d), out=show(out))
    b.step(f"md5sum {q(d)}/* | awk '{{print $1}}' | sort | uniq -d > {q(out)}")
    b.primary(out, lines_text(dup), "text")


BREADTH = {1: _breadth1, 2: _breadth2}
generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5], BREADTH)
