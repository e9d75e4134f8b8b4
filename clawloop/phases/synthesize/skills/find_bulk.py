"""find_bulk: find files by name, type, size and age, and act on many files at once.

Version 2 widened the name tests beyond `*.ext` (a name that begins with or contains a word,
both with an extension) and added find's compositions (lines of the matched files, deleting by
age): a policy trained on version 1 answered "names begin with new" with `-name '*.sh'`, the
one template it knew (InterCode-Bash, docs/experiments/2026-12-05-the-default-timed-end-to-end.md).
"""

from __future__ import annotations

import fnmatch
import posixpath

from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "find_bulk"
VERSION = 2
LEVELS = {
    1: "one find: list files by extension or name prefix, count files, delete by pattern",
    2: "empty files, case-insensitive names, names containing a word, subdirectories, lines of matches",
    3: "by size or age (old files dated at setup), delete by age, prefix and extension, awkward names",
    4: "bulk rename with a loop that survives spaces; or collect files from a tree into one folder",
    5: "retention job over a tree: gzip old logs, drop temp files, report what is left",
}

_SUB = ("2023", "2024", "old", "new", "misc", "raw", "final", "drafts", "q1", "q2")
_WORDS = ("tmp", "test", "backup", "report", "copy", "scan", "img", "note")
"""Name words for prefix/contains tests: none begins a _SUB folder, so `-name 'w*'` meets files only."""


def _tree(b: TaskBuilder, root: str, exts: list[str], n: int, awkward: bool = False,
          content: str | None = None) -> list[str]:
    """`n` files spread over `root` and two subfolders; returns their relative paths."""
    subs = [root, *(f"{root}/{s}" for s in b.rng.sample(_SUB, 2))]
    subs.append(f"{subs[1]}/{b.rng.choice(_SUB)}")
    out = []
    for i in range(n):
        rel = b.name(b.rng.choice(exts), awkward=awkward and i % 3 == 0, folder=b.rng.choice(subs))
        b.file(rel, content if content is not None else f"{words.sentence(b.rng)}\n")
        out.append(rel)
    return out


def _worded(b: TaskBuilder, root: str, word: str, where: str, exts: list[str], n: int,
            awkward: bool = False) -> list[str]:
    """`n` files over `root`'s tree whose names hold `word` at the start (`where` "start") or
    in the middle ("inside"), e.g. `test_amber.txt` or `amber_test_ledger.txt`."""
    subs = [root, *(f"{root}/{s}" for s in b.rng.sample(_SUB, 2))]
    out = []
    for i in range(n):
        stem = words.awkward_stem(b.rng) if awkward and i % 3 == 0 else words.plain_stem(b.rng)
        stem = f"{word}_{stem}" if where == "start" else f"{stem}_{word}{b.rng.randrange(2, 99)}"
        rel = b.name(b.rng.choice(exts), stem=stem, folder=b.rng.choice(subs))
        b.file(rel, f"{words.sentence(b.rng)}\n")
        out.append(rel)
    return out


def _matching(b: TaskBuilder, root: str, pattern: str) -> list[str]:
    """The starting files under `root` whose name matches the find -name `pattern`, sorted."""
    return sorted(rel for path in b.files if (rel := path.split("/", 2)[2]).startswith(f"{root}/")
                  and fnmatch.fnmatchcase(posixpath.basename(rel), pattern))


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    root = b.dirname(awkward=b.awkward())
    intent = rng.choice(["list", "count", "delete", "list_prefix", "delete_prefix"])
    if intent.endswith("_prefix"):
        _prefix(b, root, intent)
        return
    ext = rng.choice(["log", "md", "jpg", "py", "tmp"])
    hits = _tree(b, root, [ext], rng.randrange(2, 6))
    others = _tree(b, root, [e for e in ("txt", "csv", f"{ext}.bak") if e != ext], b.distractor_count(2))
    if intent == "list":
        out = b.output(b.name("txt"))
        b.say("list", ext=ext, root=show(root), out=show(out))
        b.step(f"find {q(root)} -name '*.{ext}' | sort > {q(out)}")
        b.primary(out, lines_text(sorted(hits)), "text")
    elif intent == "count":
        out = b.output(b.name("txt"))
        b.say("count", root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f | wc -l > {q(out)}")
        b.primary(out, str(len(hits) + len(others)), "strip")
    else:
        b.say("delete", ext=ext, root=show(root))
        b.step(f"find {q(root)} -name '*.{ext}' -delete")
        b.expect_absent(*hits)
        b.unchanged(*others)


def _prefix(b: TaskBuilder, root: str, intent: str) -> None:
    """List or delete the files whose names begin with a word; the word also sits inside other names."""
    word = b.rng.choice(_WORDS)
    _worded(b, root, word, "start", ["txt", "log", "csv"], b.rng.randrange(2, 5))
    _worded(b, root, word, "inside", ["txt", "log"], b.distractor_count(1))
    _tree(b, root, ["txt", "md"], b.distractor_count(2))
    hits = _matching(b, root, f"{word}*")
    others = sorted(set(_matching(b, root, "*")) - set(hits))
    if intent == "list_prefix":
        out = b.output(b.name("txt"))
        b.say("list_prefix", word=word, root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -name '{word}*' | sort > {q(out)}")
        b.primary(out, lines_text(hits), "text")
    else:
        b.say("delete_prefix", word=word, root=show(root))
        b.step(f"find {q(root)} -type f -name '{word}*' -delete")
        b.expect_absent(*hits)
        b.unchanged(*others)


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    root = b.dirname(awkward=b.awkward(2, 0.3))
    intent = rng.choice(["empty", "iname", "dirs", "contains", "lines"])
    if intent == "contains":
        word = rng.choice(_WORDS)
        _worded(b, root, word, "inside", ["txt", "log", "csv"], rng.randrange(2, 5))
        _tree(b, root, ["txt", "log"], b.distractor_count(3))
        out = b.output(b.name("txt"))
        b.say("list_contains", word=word, root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -name '*{word}*' | sort > {q(out)}")
        b.primary(out, lines_text(_matching(b, root, f"*{word}*")), "text")
    elif intent == "lines":
        ext = rng.choice(["py", "php", "c", "md"])
        total = 0
        for rel in _tree(b, root, [ext], rng.randrange(2, 5)):
            n = rng.randrange(1, 7)
            b.file(rel, lines_text([words.sentence(rng) for _ in range(n)]))
            total += n
        _tree(b, root, ["txt", f"{ext}.bak"], b.distractor_count(2))
        out = b.output(b.name("txt"))
        b.say("lines", ext=ext, root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -name '*.{ext}' -exec cat {{}} + | wc -l > {q(out)}")
        b.primary(out, str(total), "strip")
    elif intent == "empty":
        empty = _tree(b, root, ["txt", "log", "dat"], rng.randrange(2, 5), content="")
        full = _tree(b, root, ["txt", "log", "dat"], b.distractor_count(3))
        b.say("empty", root=show(root))
        b.step(f"find {q(root)} -type f -empty")
        b.step(f"find {q(root)} -type f -empty -delete")
        b.expect_absent(*empty)
        b.unchanged(*full)
    elif intent == "iname":
        ext = rng.choice(["jpg", "png", "pdf"])
        hits = _tree(b, root, [ext, ext.upper(), ext.capitalize()], rng.randrange(3, 7))
        _tree(b, root, ["txt", f"{ext}.part"], b.distractor_count(2))
        out = b.output(b.name("txt"))
        b.say("iname", ext=ext, upper=ext.upper(), root=show(root), out=show(out))
        b.step(f"find {q(root)} -iname '*.{ext}' | sort > {q(out)}")
        b.primary(out, lines_text(sorted(hits)), "text")
    else:
        files = _tree(b, root, ["txt", "md"], rng.randrange(4, 8))
        dirs = sorted({p.rsplit("/", 1)[0] for p in files} - {root})
        parents = {d.rsplit("/", 1)[0] for d in dirs}
        dirs = sorted(set(dirs) | (parents - {root}))
        out = b.output(b.name("txt"))
        b.say("dirs", root=show(root), out=show(out))
        b.step(f"find {q(root)} -mindepth 1 -type d | sort > {q(out)}")
        b.primary(out, lines_text(dirs), "text")


def _dated(b: TaskBuilder, root: str, exts: list[str], awkward: bool) -> tuple[list[str], list[str]]:
    """(old, new): files over `root` dated years back at setup, and recent distractors."""
    old = _tree(b, root, exts, b.rng.randrange(2, 5), awkward=awkward)
    new = _tree(b, root, exts, b.distractor_count(3), awkward=awkward)
    for rel in old:
        b.run_setup(f"touch -d '2021-0{b.rng.randrange(1, 9)}-1{b.rng.randrange(0, 9)} 12:00' {q(rel)}")
    return old, new


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.5)
    root = b.dirname(awkward=awk)
    kind = rng.choice(["size", "age", "age_delete", "prefix_ext"])
    out = b.output(b.name("txt")) if kind != "age_delete" else ""
    if kind == "prefix_ext":
        word, ext = rng.choice(_WORDS), rng.choice(["log", "csv", "txt"])
        _worded(b, root, word, "start", [ext], rng.randrange(2, 4), awkward=awk)
        _worded(b, root, word, "start", [e for e in ("log", "csv", "txt") if e != ext], b.distractor_count(2))
        _worded(b, root, word, "inside", [ext], b.distractor_count(1))
        b.say("prefix_ext", word=word, ext=ext, root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -name '{word}*.{ext}' | sort > {q(out)}")
        b.primary(out, lines_text(_matching(b, root, f"{word}*.{ext}")), "text")
    elif kind == "age_delete":
        days = rng.choice([2, 7, 30])
        old, new = _dated(b, root, ["log", "txt", "tmp"], awk)
        b.say("age_delete", days=days, root=show(root))
        b.step(f"find {q(root)} -type f -mtime +{days} | sort")
        b.step(f"find {q(root)} -type f -mtime +{days} -delete")
        b.expect_absent(*old)
        b.unchanged(*new)
    elif kind == "size":
        # sizes stay far from the threshold so block rounding never matters
        big = _tree(b, root, ["bin", "dat", "log"], rng.randrange(2, 4), awkward=awk, content="")
        small = _tree(b, root, ["bin", "dat", "log"], b.distractor_count(3), awkward=awk, content="")
        for rel in big:
            b.file(rel, "x" * rng.randrange(24_000, 60_000))
        for rel in small:
            b.file(rel, "y" * rng.randrange(10, 8_000))
        b.say("size", root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -size +16k | sort > {q(out)}")
        b.primary(out, lines_text(sorted(big)), "text")
    else:
        days = rng.choice([7, 14, 30])
        old, new = _dated(b, root, ["log", "txt"], awk)
        b.say("age", days=days, root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -mtime +{days} | sort > {q(out)}")
        b.primary(out, lines_text(sorted(old)), "text")
        b.unchanged(*new)


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.6)
    root = b.dirname(awkward=b.awkward(p=0.3))
    if rng.random() < 0.5:
        old_ext, new_ext = rng.choice([("jpeg", "jpg"), ("htm", "html"), ("yml", "yaml"), ("markdown", "md")])
        expected: dict[str, str] = {}
        for i in range(rng.randrange(3, 6)):
            rel = b.name(old_ext, awkward=awk and i % 2 == 0, folder=root)
            text = f"{words.sentence(rng)}\n"
            b.file(rel, text)
            expected[rel.split("/", 1)[1].rsplit(".", 1)[0] + f".{new_ext}"] = text
        for _ in range(b.distractor_count(1)):
            rel = b.file(b.name(f"{old_ext}.txt", folder=root), "keep\n")
            expected[rel.split("/", 1)[1]] = "keep\n"
        b.say("rename_ext", root=show(root), old=old_ext, new=new_ext)
        b.step(f"ls {q(root)}")
        b.step(f'for f in {q(root)}/*.{old_ext}; do mv "$f" "${{f%.{old_ext}}}.{new_ext}"; done')
        b.expect_tree(root, expected)
    else:
        ext = rng.choice(["csv", "pdf", "png"])
        hits = _tree(b, root, [ext], rng.randrange(3, 6), awkward=awk)
        others = _tree(b, root, ["txt", f"{ext}.old"], b.distractor_count(2))
        dest = b.dirname()
        b.say("collect", ext=ext, root=show(root), dest=show(dest))
        b.step(f"mkdir {q(dest)}")
        b.step(f"find {q(root)} -name '*.{ext}' -exec cp {{}} {q(dest)}/ \\;")
        b.expect_tree(dest, {h.rsplit("/", 1)[1]: b.files[f"/workspace/{h}"].content for h in hits})
        for rel in hits + others:
            b.unchanged(rel)


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    root = b.dirname(awkward=b.awkward(p=0.3))
    days = rng.choice([7, 10, 30])
    old = _tree(b, root, ["log"], rng.randrange(2, 5), awkward=b.awkward(p=0.5))
    recent = _tree(b, root, ["log"], rng.randrange(1, 4))
    tmp = _tree(b, root, ["tmp"], rng.randrange(1, 4) + b.knobs.distractors, awkward=True)
    for rel in old:
        b.run_setup(f"touch -d '2020-1{rng.randrange(0, 3)}-0{rng.randrange(1, 9)} 08:30' {q(rel)}")
    out = b.output(b.name("txt", stem="remaining_logs"))
    b.say("retention", root=show(root), days=days, out=show(out))
    b.step(f"find {q(root)} -name '*.log' -mtime +{days} -exec gzip {{}} +")
    b.step(f"find {q(root)} -name '*.tmp' -delete")
    b.step(f"find {q(root)} -name '*.log' | wc -l > {q(out)}")
    for rel in old:
        b.expect_gz(rel + ".gz", b.files[f"/workspace/{rel}"].content)
        b.expect_absent(rel)
    b.unchanged(*recent)
    b.expect_absent(*tmp)
    b.primary(out, str(len(recent)), "strip")


# ---- breadth intents (synthesis.breadth): find's other tests and xargs, which held-out gold commands use
def _breadth2(b: TaskBuilder) -> None:
    rng = b.rng
    root = b.dirname(awkward=b.awkward(2, 0.3))
    intent = rng.choice(["top_only", "not_ext", "xargs_lines", "base_names"])
    ext = rng.choice(["log", "txt", "conf", "md"])
    out = b.output(b.name("out"))
    hits = _tree(b, root, [ext], rng.randrange(3, 6))
    others = _tree(b, root, [e for e in ("csv", "dat", f"{ext}.old") if e != ext], b.distractor_count(2))
    if intent == "top_only":
        top = sorted(h for h in hits if h.count("/") == root.count("/") + 1)
        if not top:
            top = [b.file(b.name(ext, folder=root), f"{words.sentence(rng)}\n")]
        b.say("top_only", ext=ext, root=show(root), out=show(out))
        b.step(f"find {q(root)} -maxdepth 1 -type f -name '*.{ext}' | sort > {q(out)}")
        b.primary(out, lines_text(sorted(top)), "text")
    elif intent == "not_ext":
        b.say("not_ext", ext=ext, root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -not -name '*.{ext}' | sort > {q(out)}")
        b.primary(out, lines_text(sorted(others)), "text")
    elif intent == "xargs_lines":
        total = 0
        for rel in hits:
            n = rng.randrange(1, 6)
            b.file(rel, lines_text([words.sentence(rng) for _ in range(n)]))
            total += n
        b.say("xargs_lines", ext=ext, root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -name '*.{ext}' -print0 | xargs -0 cat | wc -l > {q(out)}")
        b.primary(out, str(total), "strip")
    else:
        b.say("base_names", ext=ext, root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -name '*.{ext}' -exec basename {{}} \\; | sort > {q(out)}")
        b.primary(out, lines_text(sorted(posixpath.basename(h) for h in hits)), "text")


def _breadth3(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.5)
    root = b.dirname(awkward=b.awkward(p=0.3))
    intent = rng.choice(["folders_of", "xargs_copy", "concat_sorted"])
    ext = rng.choice(["csv", "log", "txt", "ini"])
    hits = _tree(b, root, [ext], rng.randrange(3, 6), awkward=awk)
    others = _tree(b, root, ["md", f"{ext}.bak"], b.distractor_count(2))
    if intent == "folders_of":
        out = b.output(b.name("out"))
        b.say("folders_of", ext=ext, root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -name '*.{ext}' -exec dirname {{}} \\; | sort -u > {q(out)}")
        b.primary(out, lines_text(sorted({posixpath.dirname(h) for h in hits})), "text")
    elif intent == "concat_sorted":
        out = b.output(b.name("all"))
        b.say("concat_sorted", ext=ext, root=show(root), out=show(out))
        b.step(f"find {q(root)} -type f -name '*.{ext}' -print0 | sort -z | xargs -0 cat > {q(out)}")
        b.primary(out, "".join(b.files[f"/workspace/{h}"].content for h in sorted(hits)), "exact")
    else:
        names: dict[str, str] = {}
        for h in hits:
            names.setdefault(posixpath.basename(h), b.files[f"/workspace/{h}"].content)
        dest = b.dirname()
        b.say("xargs_copy", ext=ext, root=show(root), dest=show(dest))
        b.step(f"mkdir -p {q(dest)}")
        b.step(f"find {q(root)} -type f -name '*.{ext}' -print0 | xargs -0 -I{{}} cp {{}} {q(dest)}/")
        if len(names) == len(hits):  # a name twice: which copy wins is the order find walks
            b.expect_tree(dest, names)
        else:
            b.expect_dir(dest)
        b.unchanged(*hits, *others)


BREADTH = {2: _breadth2, 3: _breadth3}
generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5], BREADTH)
