"""permissions_links: file modes with chmod, symbolic and hard links with ln."""

from __future__ import annotations

import random

from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "permissions_links"
VERSION = 1
LEVELS = {
    1: "one command: make a script executable, set a numeric mode, create a symlink",
    2: "modes described in words (owner-only, read-only), relative links from a subfolder",
    3: "only the scripts of a folder become executable (others keep their mode); hard links; repoint a link",
    4: "recovery: a dangling link after a move; or a script to make runnable and run (with scripting)",
    5: "normalize a whole tree (dirs 755, files 644, bin 755) and delete broken links; awkward names",
}

# mode -> how a person would say it
_WORDED = {
    0o600: "only the owner can read and write it; nobody else has any access",
    0o644: "the owner can read and write, everyone else can only read",
    0o444: "everyone can read it but nobody can write or execute it",
    0o700: "only the owner can read, write and enter/execute it",
    0o640: "owner read/write, group read-only, others nothing",
    0o755: "owner can do everything, everyone else can read and execute",
}


def _script(rng: random.Random) -> str:
    return f"#!/bin/bash\necho {words.sentence(rng, 3)}\n"


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward()
    intent = rng.choice(["exec", "mode", "symlink"])
    if intent == "exec":
        s = b.file(b.name("sh", awkward=awk), _script(rng))
        b.say("exec", s=show(s))
        b.step(f"chmod +x {q(s)}")
        b.expect_run(f"test -x {q(s)}")
    elif intent == "mode":
        mode = rng.choice([0o600, 0o640, 0o444, 0o400, 0o664])
        f = b.file(b.name(rng.choice(["key", "txt", "conf", "pem"]), awkward=awk), f"{words.sentence(rng)}\n",
                   mode=0o666 if mode != 0o666 else 0o644)
        b.say("mode", f=show(f), mode=f"{mode:o}")
        b.step(f"chmod {mode:o} {q(f)}")
        b.expect_mode(f, mode)
    else:
        t = b.file(b.name(rng.choice(["txt", "conf", "sh"]), awkward=awk), f"{words.sentence(rng)}\n")
        link = b.name("", stem=rng.choice(["current", "latest", "active", "main", "link"]) + f"_{rng.randrange(10, 99)}")
        b.say("symlink", link=show(link), t=show(t))
        b.step(f"ln -s {q(t)} {q(link)}")
        b.expect_link(link, t)
        b.unchanged(t)


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(2, 0.3)
    intent = rng.choice(["worded", "dir_mode", "rel_link"])
    if intent == "worded":
        mode = rng.choice([0o600, 0o444, 0o640, 0o755])
        f = b.file(b.name(rng.choice(["txt", "key", "sh"]), awkward=awk), f"{words.sentence(rng)}\n",
                   mode=0o666 if mode != 0o666 else 0o644)
        b.say("worded", f=show(f), rule=_WORDED[mode])
        b.step(f"ls -l {q(f)}")
        b.step(f"chmod {mode:o} {q(f)}")
        b.expect_mode(f, mode)
    elif intent == "dir_mode":
        d = b.dirname(awkward=awk)
        b.file(b.name("txt", folder=d), f"{words.sentence(rng)}\n")
        b.run_setup(f"chmod 777 {q(d)}")
        b.say("dir_mode", d=show(d))
        b.step(f"chmod 700 {q(d)}")
        b.expect_mode(d, 0o700)
    else:
        t = b.file(b.name(rng.choice(["conf", "txt", "env"]), awkward=awk), f"{words.sentence(rng)}\n")
        d = b.dirname()
        b.file(b.name("txt", folder=d), f"{words.sentence(rng)}\n")
        link = f"{d}/{rng.choice(['config', 'settings', 'shared', 'data'])}.{t.rsplit('.', 1)[1]}"
        b.say("rel_link", link=show(link), t=show(t))
        b.step(f"ln -s ../{q(t)} {q(link)}")
        b.expect_link(link, t)
        b.expect_run(f"readlink {q(link)} | grep -qv '^/'")  # relative, so the pair can move together


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    awk = b.awkward(p=0.5)
    intent = rng.choice(["only_scripts", "hardlink", "repoint"])
    if intent == "only_scripts":
        d = b.dirname(awkward=awk)
        scripts = [b.file(b.name("sh", awkward=awk and i == 0, folder=d), _script(rng)) for i in range(rng.randrange(2, 5))]
        others = [b.file(b.name(rng.choice(["txt", "md", "sh.bak"]), folder=d), f"{words.sentence(rng)}\n")
                  for _ in range(b.distractor_count(2))]
        b.say("only_scripts", d=show(d))
        b.step(f"ls -l {q(d)}")
        b.step(f"chmod +x {q(d)}/*.sh")
        for s in scripts:
            b.expect_run(f"test -x {q(s)}")
        for o in others:
            b.expect_mode(o, 0o644)
    elif intent == "hardlink":
        t = b.file(b.name("txt", awkward=awk), f"{words.sentence(rng)}\n")
        h = b.name("txt", stem=f"{t.rsplit('.', 1)[0]}_hard")
        b.say("hardlink", t=show(t), h=show(h))
        b.step(f"ln {q(t)} {q(h)}")
        b.expect_run(f"test {q(h)} -ef {q(t)} && test ! -L {q(h)}")
    else:
        rel_dir = rng.choice(["releases", "versions", "builds"])
        vs = sorted(rng.sample(range(1, 30), 3))
        for v in vs:
            b.file(f"{rel_dir}/v{v}/VERSION", f"{v}\n")
        link = b.reserve(rng.choice(["current", "live", "stable"]))
        b.run_setup(f"ln -s {rel_dir}/v{vs[1]} {link}")
        b.say("repoint", link=link, new=f"{rel_dir}/v{vs[2]}")
        b.step(f"ls -l {link}")
        b.step(f"ln -sfn {rel_dir}/v{vs[2]} {link}")
        b.expect_link(link, f"{rel_dir}/v{vs[2]}")


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    if rng.random() < 0.5:
        # broken start: the link's target was moved away
        old_dir, new_dir = rng.sample(["old", "legacy", "etc", "conf", "shared", "settings"], 2)
        fname = b.name(rng.choice(["ini", "conf", "yaml"]), awkward=b.awkward(p=0.4))
        b.file(f"{new_dir}/{fname}", f"{words.sentence(rng)}\n")
        link = b.reserve(f"{rng.choice(['app', 'service', 'tool'])}.{fname.rsplit('.', 1)[1]}")
        b.run_setup(f"ln -s {q(old_dir + '/' + fname)} {q(link)}")
        b.say("dangling", link=show(link), new=show(new_dir))
        b.step(f"ls -l {q(link)}")
        b.step(f"ln -sf {q(new_dir + '/' + fname)} {q(link)}")
        b.expect_link(link, f"{new_dir}/{fname}")
    else:
        # composition with scripting: make runnable, run, keep the output
        lines = [words.sentence(rng, 3) for _ in range(rng.randrange(1, 4))]
        body = "#!/bin/bash\n" + "".join(f"echo '{ln}'\n" for ln in lines)
        s = b.file(b.name("sh", awkward=b.awkward(p=0.4)), body)
        out = b.output(b.name("txt"))
        b.say("run_script", s=show(s), out=show(out))
        b.step(f"chmod +x {q(s)}")
        b.step(f"./{q(s)} > {q(out)}")
        b.expect_run(f"test -x {q(s)}")
        b.primary(out, lines_text(lines), "text")


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    site = b.dirname(awkward=b.awkward(p=0.3))
    modes = [0o600, 0o777, 0o664, 0o700, 0o640]
    files: list[str] = []
    for i in range(rng.randrange(3, 6)):
        folder = site if i % 2 == 0 else f"{site}/{rng.choice(['css', 'img', 'pages'])}"
        files.append(b.file(b.name(rng.choice(["html", "css", "txt"]), awkward=b.awkward(p=0.5) and i == 1,
                                   folder=folder), f"{words.sentence(rng)}\n", mode=rng.choice(modes)))
    scripts = [b.file(b.name("sh", folder=f"{site}/bin"), _script(rng), mode=rng.choice([0o644, 0o600]))
               for _ in range(rng.randrange(1, 3))]
    broken = []
    for _ in range(rng.randrange(1, 3) + b.knobs.distractors):
        ln = b.name("html", folder=site)
        b.run_setup(f"ln -s /nonexistent/{rng.randrange(1000)} {q(ln)}")
        broken.append(ln)
    good = b.name("html", stem="index_link", folder=site)
    b.run_setup(f"ln -s {q(files[0].split('/', 1)[1])} {q(good)}")
    b.run_setup(f"find {q(site)} -type d -exec chmod 777 {{}} +")
    b.say("normalize", site=show(site), bin=show(f"{site}/bin"))
    b.step(f"find {q(site)} -xtype l -delete")
    b.step(f"find {q(site)} -type d -exec chmod 755 {{}} +")
    b.step(f"find {q(site)} -type f -exec chmod 644 {{}} +")
    b.step(f"chmod 755 {q(site)}/bin/*.sh")
    for f in files:
        b.expect_mode(f, 0o644)
    for s in scripts:
        b.expect_mode(s, 0o755)
    b.expect_absent(*broken)
    b.expect_mode(site, 0o755)
    b.expect_mode(f"{site}/bin", 0o755)
    b.expect_link(good, files[0])


# ---- breadth intents (synthesis.breadth): find -perm, stat -c
def _breadth2(b: TaskBuilder) -> None:
    rng = b.rng
    d = b.dirname(awkward=b.awkward(2, 0.3))
    modes = {}
    for i in range(rng.randrange(4, 8)):
        mode = rng.choice([0o755, 0o700, 0o644, 0o600, 0o444]) if i > 1 else (0o755, 0o644)[i]
        modes[b.file(b.name(rng.choice(["sh", "txt", "py"]), folder=d), _script(rng), mode=mode)] = mode
    out = b.output(b.name("txt"))
    if rng.random() < 0.5:
        b.say("owner_exec", d=show(d), out=show(out))
        b.step(f"find {q(d)} -type f -perm -u+x | sort > {q(out)}")
        b.primary(out, lines_text(sorted(r for r, m in modes.items() if m & 0o100)), "text")
    else:
        b.say("modes_list", d=show(d), out=show(out))
        b.step(f"stat -c '%a %n' {q(d)}/* > {q(out)}")
        b.primary(out, lines_text([f"{modes[r]:o} {r}" for r in sorted(modes)]), "text")


BREADTH = {2: _breadth2}
generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5], BREADTH)
