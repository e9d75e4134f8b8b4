"""env_processes: environment variables, PATH, env files, timeouts and clean environments.

Variables a task needs are set in Task.env, so the agent's shell starts with them.
"""

from __future__ import annotations

import random

from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.builder import TaskBuilder, level_generator, lines_text, q, show

NAME = "env_processes"
VERSION = 1
LEVELS = {
    1: "one command: a variable's value, the working directory, where a program lives",
    2: "run a script with a variable set for that run only; list variables with a prefix",
    3: "load an env file before running a script; stop a never-ending script with timeout",
    4: "a helper missing from PATH; run a script in an emptied environment (composition)",
    5: "a runner that needs an env file and a tools folder on PATH and checks both; look first",
}


def _var(rng: random.Random, prefix: str | None = None) -> str:
    p = prefix or rng.choice(["APP", "DEPLOY", "SHOP", "BUILD", "SITE", "JOB"])
    return f"{p}_{rng.choice(['REGION', 'MODE', 'OWNER', 'COLOR', 'TIER', 'ZONE', 'LABEL', 'TARGET'])}"


def _level1(b: TaskBuilder) -> None:
    rng = b.rng
    intent = rng.choice(["value", "pwd", "which"])
    out = b.output(b.name("txt", awkward=b.awkward()))
    if intent == "value":
        var = _var(rng)
        val = f"{words.pick(rng, 'cities')}-{rng.randrange(1, 99)}"
        b.env[var] = val
        for _ in range(b.distractor_count(1)):
            b.env[_var(rng)] = f"{words.pick(rng, 'cities')}-{rng.randrange(1, 99)}"
        b.env[var] = val
        b.say("value", var=var, out=show(out))
        b.step(f'echo "${var}" > {q(out)}')
        b.primary(out, val, "text")
    elif intent == "pwd":
        b.say("pwd", out=show(out))
        b.step(f"pwd > {q(out)}")
        b.primary(out, "/workspace", "text")
    else:
        prog = rng.choice(["tar", "grep", "sed", "sort", "gzip", "find", "awk", "python3", "bash", "head"])
        b.say("which", prog=prog, out=show(out))
        b.step(f"command -v {prog} > {q(out)}")
        # the answer depends on the sandbox image, so the verifier asks the same shell
        b.expect_run(f"test \"$(cat {q(out)})\" = \"$(command -v {prog})\"")


def _greeter(rng: random.Random, var: str) -> tuple[str, str]:
    default = rng.choice(["hello", "hi", "hey"])
    return f'#!/bin/bash\necho "${{{var}:-{default}}}, {words.pick(rng, "people")}"\n', default


def _level2(b: TaskBuilder) -> None:
    rng = b.rng
    out = b.output(b.name("txt"))
    if rng.random() < 0.5:
        var = rng.choice(["GREETING", "SALUTE", "OPENER"])
        body, _ = _greeter(rng, var)
        s = b.file(b.name("sh", awkward=b.awkward(2, 0.3)), body, mode=0o755)
        val = rng.choice(["hola", "bonjour", "ciao", "hallo", "salut", "ahoj"])
        name = body.split(", ")[1].split('"')[0]
        b.say("inline", s=show(s), var=var, val=val, out=show(out))
        b.step(f"{var}={val} ./{q(s)} > {q(out)}")
        b.primary(out, f"{val}, {name}", "text")
    else:
        prefix = rng.choice(["APP", "SHOP", "JOB", "SITE"])
        mine = {}
        for _ in range(rng.randrange(2, 5)):
            mine[_var(rng, prefix)] = words.pick(rng, "nouns")
        b.env.update(mine)
        b.env[f"X{prefix}_NOISE"] = "1"  # near misses: the prefix is not at the start
        b.env[f"{prefix}LE_PIE"] = "2"
        b.say("prefix", prefix=f"{prefix}_", out=show(out))
        b.step(f"env | grep '^{prefix}_' | sort > {q(out)}")
        b.primary(out, lines_text(sorted(f"{k}={v}" for k, v in mine.items())), "text")


def _level3(b: TaskBuilder) -> None:
    rng = b.rng
    out = b.output(b.name("txt"))
    if rng.random() < 0.5:
        keys = rng.sample(["DB_HOST", "DB_PORT", "API_URL", "API_KEY", "QUEUE_NAME", "CACHE_TTL"], 2)
        vals = {k: f"{words.pick(rng, 'nouns')}{rng.randrange(10, 99)}" for k in keys}
        envf = b.file(b.name("env", awkward=b.awkward(p=0.4), stem=rng.choice(["app", "settings", "prod", None])),
                      lines_text([f"export {k}={v}" for k, v in vals.items()]))
        s = b.file(b.name("sh"), "#!/bin/bash\n" + "".join(
            f'[ -n "${k}" ] || {{ echo "{k} is not set" >&2; exit 1; }}\n' for k in keys)
            + "".join(f'echo "{k.lower()}=${k}"\n' for k in keys), mode=0o755)
        b.say("source", envf=show(envf), s=show(s), out=show(out))
        b.step(f"./{q(s)}")
        b.step(f"source ./{q(envf)} && ./{q(s)} > {q(out)}")
        b.primary(out, lines_text([f"{k.lower()}={v}" for k, v in vals.items()]), "text")
    else:
        lines = [f"tick {i} {words.pick(rng, 'nouns')}" for i in range(1, rng.randrange(3, 7))]
        s = b.file(b.name("sh", awkward=b.awkward(p=0.4)),
                   "#!/bin/bash\n" + "".join(f"echo '{ln}'\n" for ln in lines) + "exec sleep 1000\n", mode=0o755)
        secs = rng.choice([1, 2])
        b.say("timeout", s=show(s), secs=secs, out=show(out))
        b.step(f"timeout {secs} ./{q(s)} > {q(out)}")
        b.primary(out, lines_text(lines), "text")


def _level4(b: TaskBuilder) -> None:
    rng = b.rng
    out = b.output(b.name("txt"))
    if rng.random() < 0.5:
        tool = rng.choice(["fmtdate", "mkreport", "stamp", "tally", "greetx"])
        tools_dir = b.reserve(rng.choice(["tools", "vendor/bin", "opt/bin", "helpers"]))
        word = words.pick(rng, "nouns")
        b.file(f"{tools_dir}/{tool}", f"#!/bin/bash\necho \"{tool}: $1\"\n", mode=0o755)
        s = b.file(b.name("sh", awkward=b.awkward(p=0.4)), f"#!/bin/bash\n{tool} {word}\n", mode=0o755)
        b.say("path", s=show(s), tool=tool, d=show(tools_dir), out=show(out))
        b.step(f"./{q(s)}")
        b.step(f"ls {tools_dir}")
        b.step(f'PATH="$PWD/{tools_dir}:$PATH" ./{q(s)} > {q(out)}')
        b.primary(out, f"{tool}: {word}", "text")
        b.unchanged(s)
    else:
        secret = rng.choice(["API_TOKEN", "SECRET_KEY", "DB_PASSWORD", "AUTH_TOKEN"])
        b.env[secret] = f"s3cr3t-{rng.randrange(1000, 9999)}"
        var = _var(rng)
        b.env[var] = words.pick(rng, "nouns")
        s = b.file(b.name("sh", awkward=b.awkward(p=0.4)),
                   f'#!/bin/bash\necho "{secret}=${{{secret}:-unset}}"\necho "{var}=${{{var}:-unset}}"\n',
                   mode=0o755)
        b.say("clean_env", s=show(s), out=show(out))
        b.step(f"env -i ./{q(s)} > {q(out)}")
        b.primary(out, lines_text([f"{secret}=unset", f"{var}=unset"]), "text")


def _level5(b: TaskBuilder) -> None:
    rng = b.rng
    keys = rng.sample(["REGION", "STAGE", "BUCKET", "OWNER", "TIER"], 2)
    vals = {k: f"{words.pick(rng, 'cities')}{rng.randrange(1, 9)}" for k in keys}
    envf = b.file(b.name("env", stem=rng.choice(["deploy", "release", "runner"])),
                  lines_text([f"export {k}={v}" for k, v in vals.items()]))
    tool = rng.choice(["pushit", "shipper", "uploadr"])
    bin_dir = b.reserve(rng.choice(["bin", "tools", "scripts/bin"]))
    b.file(f"{bin_dir}/{tool}", f'#!/bin/bash\necho "{tool} $*"\n', mode=0o755)
    checks = "".join(f'[ -n "${k}" ] || {{ echo "missing {k}" >&2; exit 2; }}\n' for k in keys)
    runner = b.file(b.name("sh", awkward=b.awkward(p=0.4), stem=rng.choice(["run", "deploy", "release"])),
                    "#!/bin/bash\n" + checks
                    + f'command -v {tool} > /dev/null || {{ echo "{tool} not found" >&2; exit 3; }}\n'
                    + f'{tool} {" ".join("$" + k for k in keys)}\necho done\n', mode=0o755)
    code = b.output(b.name("txt", stem="exit_code"))
    out = b.output(b.name("txt"))
    b.say("runner", runner=show(runner), envf=show(envf), d=show(bin_dir), out=show(out), code=show(code))
    b.step(f"cat {q(runner)}")
    b.step(f'source ./{q(envf)} && PATH="$PWD/{bin_dir}:$PATH" ./{q(runner)} > {q(out)}; echo $? > {q(code)}')
    b.primary(out, lines_text([f"{tool} {' '.join(vals[k] for k in keys)}", "done"]), "text")
    b.expect_file(code, "0", "strip")
    b.unchanged(runner)


generate = level_generator(NAME, VERSION, [_level1, _level2, _level3, _level4, _level5])
