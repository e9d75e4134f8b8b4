"""git: everyday repository work (init, commit, branch, restore, history, merge, revert).

Repositories are built by setup commands with a fixed identity and clock (Task.env), so
commit contents are reproducible. Only offered when git exists (see skills/__init__.py).
"""

from __future__ import annotations

import random

from clawloop.config.knobs import Knobs
from clawloop.core.tasks.task import Task
from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.builder import TaskBuilder, lines_text, q, show

NAME = "git"
VERSION = 1
LEVELS = {
    1: "one command: init a repository, commit a tracked change, read the last message",
    2: "add + commit a new file, create a branch, restore a modified file",
    3: "commit only some files (an untracked distractor stays), .gitignore, count commits by author",
    4: "recovery: discard a mess of uncommitted changes, undo the last commit keeping its work, or find when a line appeared",
    5: "merge a feature branch, or revert one old commit by its message without rewriting history",
}

_ENV = {
    "GIT_AUTHOR_NAME": "Clawloop Bot", "GIT_AUTHOR_EMAIL": "bot@example.com",
    "GIT_COMMITTER_NAME": "Clawloop Bot", "GIT_COMMITTER_EMAIL": "bot@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T12:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T12:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _msg(rng: random.Random) -> str:
    verb = rng.choice(["Add", "Update", "Fix", "Remove", "Rename", "Document", "Tidy"])
    return f"{verb} {words.pick(rng, 'adjectives')} {words.pick(rng, 'nouns')}"


def _repo(b: TaskBuilder, n_files: int) -> dict[str, str]:
    """A repository in the workspace whose first commit holds `n_files` new files."""
    files = {}
    for _ in range(n_files):
        rel = b.name(b.rng.choice(["txt", "md", "py", "cfg"]))
        text = lines_text([words.sentence(b.rng) for _ in range(b.rng.randrange(1, 4))])
        b.file(rel, text)
        files[rel] = text
    # every starting file exists before setup runs: commit only these, so later files stay untracked
    b.run_setup(f"git init -q -b main && git add -- {' '.join(q(f) for f in files)} && git commit -qm 'Initial commit'")
    return files


def _clean(b: TaskBuilder) -> None:
    """Tracked files match HEAD and nothing is staged (untracked files are allowed)."""
    b.expect_run("git status --porcelain --untracked-files=no", "")


def _commit(b: TaskBuilder, rel: str, text: str, msg: str, author: str | None = None) -> None:
    """A setup commit writing `text` to `rel`."""
    who = f"GIT_AUTHOR_NAME={author} GIT_AUTHOR_EMAIL={author}@example.com " if author else ""
    b.run_setup(f"printf '%s' {q(text)} > {q(rel)} && git add {q(rel)} && {who}git commit -qm {q(msg)}")


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    intent = rng.choice(["init", "commit_all", "last_message"])
    if intent == "init":
        d = b.dirname(awkward=b.awkward())
        for _ in range(rng.randrange(1, 4)):
            b.file(b.name("txt", folder=d), f"{words.sentence(rng)}\n")
        b.say("init", d=show(d))
        b.step(f"git init {q(d)}")
        b.expect_run(f"git -C {q(d)} rev-parse --is-inside-work-tree", "true")
        return
    files = _repo(b, rng.randrange(2, 4))
    if intent == "commit_all":
        rel = rng.choice(sorted(files))
        b.run_setup(f"echo {q(words.sentence(rng))} >> {q(rel)}")
        msg = _msg(rng)
        b.say("commit_all", f=show(rel), msg=msg)
        b.step(f"git commit -am {q(msg)}")
        b.expect_run("git log -1 --format=%s", msg)
        _clean(b)
    else:
        msgs = [_msg(rng) for _ in range(rng.randrange(1, 3))]
        for m in msgs:
            rel = rng.choice(sorted(files))
            _commit(b, rel, files[rel] + f"{m}\n", m)
            files[rel] += f"{m}\n"
        out = b.output(b.name("txt"))
        b.say("last_message", out=show(out))
        b.step(f"git log -1 --format=%s > {q(out)}")
        b.primary(out, msgs[-1], "text")


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    files = _repo(b, rng.randrange(2, 4))
    intent = rng.choice(["add_commit", "branch", "restore"])
    if intent == "add_commit":
        new = b.file(b.name("md", awkward=b.awkward(2, 0.3)), f"# {words.sentence(rng, 3)}\n")
        msg = _msg(rng)
        b.say("add_commit", f=show(new), msg=msg)
        b.step(f"git add {q(new)}")
        b.step(f"git commit -m {q(msg)}")
        b.expect_run("git log -1 --format=%s", msg)
        b.expect_run(f"git -c core.quotePath=false ls-files -- {q(new)}", new)
        _clean(b)
    elif intent == "branch":
        br = f"{rng.choice(['feature', 'fix', 'topic'])}/{words.pick(rng, 'nouns')}-{rng.randrange(10, 99)}"
        b.say("branch", br=br)
        b.step(f"git checkout -b {br}")
        b.expect_run("git branch --show-current", br)
    else:
        rel = rng.choice(sorted(files))
        b.run_setup(f"echo {q(words.sentence(rng))} >> {q(rel)}")
        b.say("restore", f=show(rel))
        b.step("git status --short")
        b.step(f"git checkout -- {q(rel)}")
        b.expect_file(rel, files[rel], "exact")
        _clean(b)


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    files = _repo(b, rng.randrange(2, 4))
    intent = rng.choice(["partial", "ignore", "by_author"])
    if intent == "partial":
        picked = [b.file(b.name(rng.choice(["txt", "py"]), awkward=b.awkward(p=0.4) and i == 0), f"{words.sentence(rng)}\n")
                  for i in range(2)]
        scratch = b.file(b.name("tmp", stem=f"scratch_{rng.randrange(10, 99)}"), "notes\n")
        msg = _msg(rng)
        b.say("partial", a=show(picked[0]), c=show(picked[1]), scratch=show(scratch), msg=msg)
        b.step(f"git add {q(picked[0])} {q(picked[1])}")
        b.step(f"git commit -m {q(msg)}")
        b.expect_run("git -c core.quotePath=false show --name-only --format= HEAD | LC_ALL=C sort", lines_text(sorted(picked)))
        b.expect_run("git log -1 --format=%s", msg)
        b.expect_run(f"git status --porcelain -- {q(scratch)}", f"?? {scratch}")
        _clean(b)
    elif intent == "ignore":
        ext = rng.choice(["log", "tmp", "cache", "bak"])
        for _ in range(rng.randrange(1, 3)):
            b.file(b.name(ext), "noise\n")
        msg = _msg(rng)
        b.say("ignore", ext=ext, msg=msg)
        b.step(f"echo '*.{ext}' > .gitignore")
        b.step("git add .gitignore")
        b.step(f"git commit -m {q(msg)}")
        b.expect_run(f"git check-ignore -q probe.{ext}")
        b.expect_run("git ls-files --error-unmatch .gitignore")
        b.expect_run(f"git status --porcelain --ignored=no -- '*.{ext}'", "")
        _clean(b)
    else:
        authors = words.sample(rng, "people", 3)
        counts = dict.fromkeys(authors, 0)
        rel = rng.choice(sorted(files))
        text = files[rel]
        for _ in range(rng.randrange(4, 9)):
            who = rng.choice(authors)
            text += f"{words.sentence(rng, 3)}\n"
            _commit(b, rel, text, _msg(rng), author=who)
            counts[who] += 1
        who = rng.choice([a for a in authors if counts[a]])
        # --author is a pattern over "Name <email>": count the way git will
        n = sum(c for a, c in counts.items() if who in f"{a} <{a}@example.com>")
        out = b.output(b.name("txt"))
        b.say("by_author", who=who, out=show(out))
        b.step("git log --format='%an %s'")
        b.step(f"git log --author={who} --oneline | wc -l > {q(out)}")
        b.primary(out, str(n), "strip")


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    files = _repo(b, rng.randrange(3, 5))
    intent = rng.choice(["discard", "undo_last", "pickaxe"])
    if intent == "discard":
        names = sorted(files)
        b.run_setup(f"echo broken >> {q(names[0])} && git add {q(names[0])}")
        b.run_setup(f"echo oops > {q(names[1])}")
        keep = b.file(b.name("txt", stem=f"my_notes_{rng.randrange(10, 99)}"), "keep me\n")
        b.say("discard", keep=show(keep))
        b.step("git status --short")
        b.step("git reset --hard")
        for rel, text in files.items():
            b.expect_file(rel, text, "exact")
        _clean(b)
        b.unchanged(keep)
    elif intent == "undo_last":
        rel = rng.choice(sorted(files))
        first = _msg(rng)
        new_text = files[rel] + f"{words.sentence(rng)}\n"
        _commit(b, rel, new_text, first)
        files[rel] = new_text
        second = _msg(rng)
        final = new_text + f"{words.sentence(rng)}\n"
        _commit(b, rel, final, second)
        b.say("undo_last", msg=second)
        b.step("git log --oneline -3")
        b.step("git reset --soft HEAD~1")
        b.expect_run("git log -1 --format=%s", first)
        b.expect_file(rel, final, "exact")
        b.expect_run("git diff --cached --name-only", rel)
    else:
        token = f"{words.pick(rng, 'nouns')}_{rng.randrange(100, 999)}"
        rel = rng.choice(sorted(files))
        text = files[rel]
        target = ""
        for i in range(rng.randrange(3, 6)):
            m = _msg(rng)
            line = f"{words.sentence(rng, 3)}{' ' + token if i == 1 else ''}\n"
            text += line
            _commit(b, rel, text, m)
            target = m if i == 1 else target
        out = b.output(b.name("txt"))
        b.say("pickaxe", token=token, out=show(out))
        b.step(f"git log -S {token} --format=%s > {q(out)}")
        b.primary(out, target, "text")


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    files = _repo(b, rng.randrange(2, 4))
    if rng.random() < 0.5:
        br = f"feature/{words.pick(rng, 'nouns')}"
        new = b.name("py", folder=rng.choice(["src", "lib", "app"]))
        body = lines_text([f"def {words.pick(rng, 'nouns')}():", "    return 1"])
        b.run_setup(f"git checkout -q -b {br} && mkdir -p {q(new.rsplit('/', 1)[0])} && printf '%s' {q(body)} > {q(new)}"
                    f" && git add {q(new)} && git commit -qm {q(_msg(rng))} && git checkout -q main")
        main_file = rng.choice(sorted(files))
        _commit(b, main_file, files[main_file] + "main side\n", _msg(rng))
        b.say("merge", br=br)
        b.step("git branch -a")
        b.step(f"git merge --no-edit {br}")
        b.expect_run("git branch --show-current", "main")
        b.expect_run(f"git merge-base --is-ancestor {br} HEAD")
        b.expect_file(new, body, "exact")
        b.expect_file(main_file, files[main_file] + "main side\n", "exact")
        _clean(b)
    else:
        cfg = b.name("ini", stem=rng.choice(["settings", "app", "service"]))
        key = rng.choice(["debug", "verbose", "dry_run"])
        base = f"name={words.pick(rng, 'nouns')}\n{key}=false\n"
        b.file(cfg, base)
        b.run_setup(f"git add {q(cfg)} && git commit -qm 'Add {cfg}'")
        bad = f"Turn on {key} for {words.pick(rng, 'cities')}"
        bad_text = base.replace(f"{key}=false", f"{key}=true")
        _commit(b, cfg, bad_text, bad)
        other = rng.choice(sorted(files))
        later = files[other] + f"{words.sentence(rng)}\n"
        _commit(b, other, later, _msg(rng))
        b.say("revert", msg=bad)
        b.step("git log --oneline")
        b.step(f"git revert --no-edit $(git log --format=%h --grep={q('^' + bad + '$')})")
        b.expect_file(cfg, base, "exact")
        b.expect_file(other, later, "exact")
        b.expect_run("git rev-list --count HEAD", "5")
        _clean(b)


_LEVELS = {1: _level1, 2: _level2, 3: _level3, 4: _level4, 5: _level5}


def generate(level: int, rng: random.Random, knobs: Knobs, answer_rng: random.Random | None = None) -> Task:
    b = TaskBuilder(NAME, VERSION, level, rng, knobs, answer_rng)
    b.env.update(_ENV)
    b.tag("needs:git")
    _LEVELS[level](b)
    return b.build()
