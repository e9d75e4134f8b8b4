"""How a hidden verifier runs, and what counts as its reward.

The agent owns everything the verifier can see (workspace, /root, /tmp, /logs, a repo's
.git/config), and a policy trained on these rewards is pushed toward whatever fools them. So the
verifier runs in a clean world, built after every command of the agent ended (no agent process
survives its command):

- a root the agent could not program (`Sandbox.trusted_root`; bwrap: sandbox/_trusted.py): the
  /bin /lib /lib64 /sbin links are the sandbox's originals and /etc is the image's as built
  (frozen after the task's setup, `Sandbox.freeze_etc`: the configuration its tools read, from
  /etc/magic to /etc/xdg/pip and /etc/init.d, is the task's, never the agent's; only what tasks
  deliver there, users or a sudoers rule, is the agent's: `DELIVERABLE_ETC`), `/` and /etc
  read-only; the agent's top-level dirs are carried over;
- search lists of the task's env (PATH, LD_LIBRARY_PATH, PYTHONPATH...: `SEARCH_LIST`) keep
  their absolute entries only: an empty or relative one is the cwd, the agent's workdir;
- fresh dirs mounted only while it runs, all scratch dirs of the sandbox (inside its disk quota)
  that the agent never saw: its tests at /tests, **read-only** (an agent script the verifier runs,
  or a link the agent planted where the verifier writes, cannot change the expected files), an
  empty /logs/verifier for the reward, an empty HOME and TMPDIR under `WORLD`, and a private /tmp
  where the backend can mount one (bwrap; docker's verifier prelude deletes the links the agent
  left in /tmp instead);
- cwd stays the task's workdir (Harbor verifiers use relative paths such as `python3 total.py`);
  what made that dangerous is Python putting the cwd (or the script's dir) first on sys.path
  for `python3 -`, `-c`, `-m` and scripts: `/workspace/json.py` or `pytest.py` would run inside
  the verifier. An import guard (sandbox/_pyguard.py), which every isolated sandbox shows
  read-only at `PYGUARD_MOUNT` and PYTHONPATH loads into every python as its sitecustomize,
  lets project code be imported as under Harbor (`python3 -m pkg` in the project dir,
  `python3 /app/main.py` importing its siblings) but never shadow a module of the interpreter's
  own dirs (stdlib, site-packages, the runtime). It goes first on the task's PYTHONPATH; no other
  sitecustomize runs (an image's lives in the agent-writable /etc); a test script that replaces
  PYTHONPATH instead of extending it drops the guard. Where the guard is not mounted (the local
  backend) `PYTHONSAFEPATH` is set instead, the old blunt rule. `PYTHONNOUSERSITE` keeps user
  site-packages (`usercustomize.py` under ~/.local) out, `PYTHONDONTWRITEBYTECODE` keeps
  /tests and the workspace free of bytecode;
- pytest finds no config file the agent planted above /tests: `pytest.ini`, `pyproject.toml`,
  `conftest.py`, ... in / and /logs are removed first (`PY_PRELUDE`; an `addopts = --co` there
  made every test run pass, measured on bwrap and docker), and loads plugins of the interpreter's
  own site-packages only (autoload off; a `*.dist-info` in the cwd named the agent's plugin);
- git reads no system config, a global config pinned to the fresh HOME (so `git config --global`
  still works), and the repo's own config cannot name a program: `GIT_CONFIG_COUNT` entries
  (command-line scope, above the repo's) neutralize the keys that run one (`GIT_GUARD`), and a
  prelude does the same for the filter/diff/merge drivers of every repo the verifier could
  touch (the workdir's and every one below the agent's dirs).
  A verifier that reads one of these keys with plain `git config KEY` sees our value (use
  `git config --local`);
- the task's own env (task.env, then its `[verifier] env`) comes first, these settings last, so
  a task cannot undo them.

Reward: the reward is what the verifier itself computed; agent code and configuration that the
verifier runs may do anything in its sandbox except decide it. So the entry script is exec'd (it
is the command's top process) and one killed by a signal (an agent program it ran can kill it
after writing reward.txt) or timed out is an error; processes it left are killed before the
reward is read (the output says how many: a service it started is legitimate); /logs/verifier is
sealed against FIFOs, sockets, devices and symlinks (Landlock where the kernel has it; the host
refuses a reward dir holding one either way). Only reward.txt and reward.json in that fresh /logs/verifier count, read on the host
without following a symlink and with a size cap (`sandbox._paths.read_beneath`). Precedence:
whichever exists; when both exist they must agree, else the verdict is an error — a script of
the agent that the verifier executes can write either file, and the verifier writes its own after
it, so neither file may overrule the other. The value must be finite and within [0, 1]; anything
else is an error, never a pass. Errors are outcome "error" (masked in training), never "failed".
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shlex
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from clawloop.core.tasks.file_tree import write_tree
from clawloop.core.tasks.task import FileSpec, Task
from sandbox._layout import PYGUARD_MOUNT, PYTEST_PLUGINS_MODULE, SEAL_SCRIPT
from sandbox._paths import read_beneath, rmtree_force
from sandbox.base import ExecResult, Sandbox, SandboxError

PASS_THRESHOLD = 1.0 - 1e-9
"""A verdict passes when reward >= this."""
WORLD = "/logs/clawloop-verifier"
"""Mount point of the verifier's fresh HOME (`WORLD/home`) and TMPDIR (`WORLD/tmp`). Under /logs
because every isolated backend can mount there (docker only there, /tests and the workspace)."""
REWARD_MAX_BYTES = 64 << 10
"""Largest reward file read (reward.json may carry other metrics besides "reward")."""

GIT_GUARD: dict[str, str] = {
    "core.fsmonitor": "false", "core.hooksPath": "/dev/null", "core.pager": "cat", "core.editor": ":",
    "sequence.editor": ":", "core.sshCommand": "false", "core.askPass": "", "credential.helper": "",
    "core.alternateRefsCommand": "true", "diff.external": "", "gpg.program": "false",
    "gpg.ssh.program": "false", "gpg.x509.program": "false", "log.showSignature": "false",
    "protocol.ext.allow": "never",
}
"""Repo config keys that make git run a program, and harmless values (an empty diff.external
makes `git diff` fail rather than run the agent's command)."""

_DRIVERS = (r"^(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver)$"
            r"|^(difftool|mergetool)\..+\.cmd$|^credential\..+\.helper$"
            r"|^remote\..+\.(uploadpack|receivepack)$|^submodule\..+\.update$")
_NOT_AGENT = "|".join(f"/{n}/" for n in ("usr", "proc", "sys", "dev", "etc", "bin", "sbin", "lib", "lib32",
                                          "lib64", "libx32", "boot", "tests"))
_FIND_GIT = (f"find {{args}} -xdev \\( -path /opt/clawloop-runtime -o -path {PYGUARD_MOUNT} \\) "
             "-prune -o -name .git -printf '%h\\0' -prune 2>/dev/null")
_FIND_ARGS = 256
"""Top-level dirs up to which one `find` takes them all as arguments (a trusted root carries at most
256, sandbox/_trusted.py); more (a docker root the agent filled) go through xargs, so that no
argument list is ever too long for exec."""
GIT_DRIVER_PRELUDE = f"""if command -v git >/dev/null 2>&1; then
  __cl_n=${{GIT_CONFIG_COUNT:-0}} __cl_d=$PWD __cl_ts=() __cl_rs=()
  while [ ! -e "$__cl_d/.git" ] && [ -n "$__cl_d" ]; do __cl_d=${{__cl_d%/*}}; done
  if [ -e "$__cl_d/.git" ] || [ -n "${{GIT_DIR:-}}" ]; then __cl_rs+=("$PWD"); fi
  for __cl_t in /*/; do case $__cl_t in {_NOT_AGENT}) ;; *) __cl_ts+=("${{__cl_t%/}}") ;; esac; done
  if [ ${{#__cl_ts[@]}} -gt 0 ]; then
    while IFS= read -r -d '' __cl_r; do __cl_rs+=("$__cl_r"); done < <(
      if [ ${{#__cl_ts[@]}} -le {_FIND_ARGS} ]; then exec {_FIND_GIT.format(args='"${__cl_ts[@]}"')}
      else printf '%s\\0' "${{__cl_ts[@]}}" | xargs -0r sh -c {shlex.quote(_FIND_GIT.format(args='"$@"'))} sh; fi)
  fi
  for __cl_r in "${{__cl_rs[@]}}"; do
    while IFS= read -r -d '' __cl_k; do
      case $__cl_k in
        *.textconv) __cl_v=cat ;; *.uploadpack) __cl_v=git-upload-pack ;;
        *.receivepack) __cl_v=git-receive-pack ;; *.update) __cl_v=checkout ;; *) __cl_v= ;;
      esac
      export "GIT_CONFIG_KEY_$__cl_n=$__cl_k" "GIT_CONFIG_VALUE_$__cl_n=$__cl_v"; __cl_n=$((__cl_n + 1))
    done < <(git -C "$__cl_r" config -z --name-only --get-regexp {shlex.quote(_DRIVERS)} 2>/dev/null)
  done
  export GIT_CONFIG_COUNT=$__cl_n; unset __cl_n __cl_k __cl_v __cl_r __cl_t __cl_d __cl_ts __cl_rs
fi
"""
"""Per-driver keys (filter.<name>.clean, ...) cannot be listed in advance: the names are the repos'
own, and a GIT_CONFIG_* entry (command-line scope, above every repo's config) holds for every repo
git opens. So this runs before the verifier (same exec) and neutralizes the driver keys of every
repository the verifier could touch: the one enclosing the workdir and every one below the
agent's top-level dirs (found by their `.git`, dir or gitfile; not in the system dirs or /tests):
identity filters, `cat` as textconv, no external diff, merge or tool driver (git fails instead),
no credential helper. Repos the verifier makes itself are its own. Where no repo is found it
costs one `find` (and the fork that reads it): the dirs are collected in bash, not by a pipeline
through xargs, sh and sort (~20 ms a verifier on the 2-core box; a repo found twice is neutralized
twice, with the same values)."""


@dataclass(frozen=True)
class Verdict:
    """What the verifier said."""

    outcome: Literal["passed", "failed", "error"]
    reward: float | None
    reason: str | None
    output: str
    duration_s: float = 0.0
    scores: dict[str, Any] | None = None
    """Every dimension score of a grader that gives several (Claw-Eval-Live); None otherwise."""

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


@dataclass(frozen=True)
class VerifierRun:
    """One run of a verifier: its result, and the host dir that was its /logs/verifier."""

    result: ExecResult
    logs: Path
    duration_s: float


def harbor_env(task: Task, section: str) -> dict[str, str]:
    """`[<section>] env` of the task's original task.toml (verifier, solution), if any."""
    h = task.metadata.get("harbor")
    toml = h.get("task_toml") if isinstance(h, dict) else None
    sec = toml.get(section) if isinstance(toml, dict) else None
    env = sec.get("env") if isinstance(sec, dict) else None
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


SEARCH_LIST = re.compile(r"(PATH|PATHS|LIB|DIRS)$|^LD_PRELOAD$")
"""Variables holding a list of places where a program looks for code or configuration (PATH,
LD_LIBRARY_PATH, PYTHONPATH, PERL5LIB, RUBYLIB, NODE_PATH, CLASSPATH, XDG_CONFIG_DIRS, ...)."""


LOADER_LISTS = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")
"""Where ld.so finds code for every program, the host's /usr/bin/python3 too: an entry in a dir
the agent writes (`ENV LD_LIBRARY_PATH=/opt/conda/lib`, then its libexpat.so.1) runs the agent's
code in a trusted interpreter. Only entries under SYSTEM_DIRS stay."""
SYSTEM_DIRS = ("/usr/",)
"""Dirs no command of the agent's can write on any backend (bwrap shows the host's read-only)."""
STARTUP_FILES = ("BASH_ENV", "ENV")
"""Scripts a shell runs before the verifier's first line; the task's value names a file of the
agent's (`ENV BASH_ENV=/root/.bashrc`, the conda and nvm pattern): the verifier runs with none."""


def clean_search_lists(env: dict[str, str]) -> dict[str, str]:
    """`env` with every search list (SEARCH_LIST) reduced to its absolute entries: an empty or
    relative entry names the cwd, the agent's workdir (`ENV LD_LIBRARY_PATH=/usr/local/lib:$LD_LIBRARY_PATH`
    with the variable unset before ends in one, and ld.so then loads the agent's libexpat.so.1
    into the verifier's python3); the loader's lists (LOADER_LISTS) to entries under SYSTEM_DIRS.
    A list left empty is dropped, and so are the shells' startup files (STARTUP_FILES)."""
    out = {}
    for key, value in env.items():
        if key in STARTUP_FILES:
            continue
        if SEARCH_LIST.search(key) or key in LOADER_LISTS:
            sep = " " if key == "LD_PRELOAD" and ":" not in value else ":"
            value = sep.join(p for p in value.split(sep) if p.startswith("/") and (
                key not in LOADER_LISTS or (os.path.normpath(p) + "/").startswith(SYSTEM_DIRS)))
            if not value:
                continue
        out[key] = value
    return out


def verifier_env(task: Task) -> dict[str, str]:
    """The verifier's environment: the task's, then its `[verifier] env` (search lists without
    relative entries), then the clean world."""
    home, tmp = f"{WORLD}/home", f"{WORLD}/tmp"
    env = clean_search_lists({**task.env, **harbor_env(task, "verifier")})
    env["PYTHONPATH"] = ":".join(p for p in (PYGUARD_MOUNT, env.get("PYTHONPATH")) if p)
    env.update({"HOME": home, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp, "XDG_CONFIG_HOME": f"{home}/.config",
                "XDG_CACHE_HOME": f"{home}/.cache", "XDG_DATA_HOME": f"{home}/.local/share",
                "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
                "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": f"{home}/.gitconfig",
                "GIT_CONFIG_PARAMETERS": "", "GIT_CONFIG_COUNT": str(len(GIT_GUARD))})
    for i, (key, value) in enumerate(GIT_GUARD.items()):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


PYTEST_CONFIGS = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml", "tox.ini",
                  "setup.cfg", "setup.py", "conftest.py")
"""Files pytest reads in the tests' dir *and every dir above it* to pick its rootdir and options
(`addopts = --co` makes every run a pass), and a conftest.py it then runs in that rootdir."""
PY_PRELUDE = (f"if [ -r {PYGUARD_MOUNT}/sitecustomize.py ]; then __cl_c=(); "
              f"for __cl_f in {' '.join(f'/{n} /logs/{n}' for n in PYTEST_CONFIGS)}; do "
              '[ -e "$__cl_f" ] || [ -L "$__cl_f" ] && __cl_c+=("$__cl_f"); done; '
              '[ ${#__cl_c[@]} -eq 0 ] || rm -f "${__cl_c[@]}" 2>/dev/null; unset __cl_c __cl_f; '
              f"export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTEST_PLUGINS={PYTEST_PLUGINS_MODULE}; "
              "else export PYTHONSAFEPATH=1; fi\n")
"""Python and pytest in an isolated sandbox: the agent can write /logs, a dir above the verifier's
TMPDIR, so pytest config files there are removed (the trusted root's / has no files of the agent's;
Harbor's tests live in /tests; a task's own /tests/pytest.ini still counts; `rm` runs only when one
is there: a process less per verifier). pytest loads no plugin
by entry point (a `*.dist-info` in the cwd, which `python3 -m pytest` puts on sys.path, would name
the agent's module): the guard's plugin module loads those of the interpreter's own site-packages
(pytest-json-ctrf's `--ctrf`...). Without an import guard (the local backend, whose / is the
host's) Python drops the cwd and script dir from sys.path instead."""


TMP_PRELUDE = "find /tmp /var/tmp -xdev -type l -delete 2>/dev/null\n"
"""Links the agent left in the temp dirs, where verifiers write fixed names (`> /tmp/actual.txt`
through a link into /tests): gone before the verifier starts. Where /tmp is the verifier's own
(bwrap) only /var/tmp has any."""


LOGS = "/logs/verifier"
"""The verifier's reward dir. Its entry script starts exec'd, so that it is the command's top
process (the exec server sees it killed by a signal, not the 128+N of a shell around it), under
the seal of /logs/verifier (sandbox/_seal.py: no FIFO, socket, device or symlink there) where the
sandbox has it."""


def verifier_command(task: Task) -> str:
    """The verifier's command line: the temp, python and git preludes, then its entry script,
    exec'd (sealed where the sandbox can)."""
    entry = shlex.quote(f"/tests/{task.verifier.entry}")
    return (f"{TMP_PRELUDE}{PY_PRELUDE}{GIT_DRIVER_PRELUDE}"
            f"if [ -r {SEAL_SCRIPT} ] && [ -x /usr/bin/python3 ]; then\n"
            f"  exec /usr/bin/python3 -I -S {SEAL_SCRIPT} {LOGS} /bin/bash {entry}\nfi\nexec /bin/bash {entry}\n")


def write_dir(files: dict[str, FileSpec], prefix: str, sb: Sandbox) -> Path:
    """A fresh scratch dir of the sandbox holding `files` (tests, solution helpers)."""
    d = sb.scratch_dir(prefix)
    write_tree(d, files)
    return d


@contextlib.contextmanager
def host_mounts(sb: Sandbox, dirs: dict[str, Path], fallback: Callable[[str], bool] | None = None,
                *, read_only: frozenset[str] = frozenset()) -> Iterator[list[str]]:
    """Mount each host dir at its target, writable unless it is in `read_only` (where `sb.mount`
    refuses, `fallback(target)` may place the files otherwise and return True); yields the
    targets mounted, which the block may unmount early by popping them. On exit: unmount the
    rest, delete every host dir (without recursion: the sandbox may have nested them deep)."""
    mounted: list[str] = []
    try:
        for target, host in dirs.items():
            writable = target not in read_only
            host.chmod(0o777 if writable else 0o755)
            try:
                sb.mount(host, target, writable=writable)
            except SandboxError:
                if fallback is None or not fallback(target):
                    raise
                continue
            mounted.append(target)
        yield mounted
    finally:
        for target in reversed(mounted):
            with contextlib.suppress(SandboxError, OSError):
                sb.unmount(target)
        for host in dirs.values():
            rmtree_force(host)


@contextlib.contextmanager
def run_verifier(sb: Sandbox, task: Task) -> Iterator[VerifierRun]:
    """On the sandbox's trusted root, mount fresh /tests (read-only), /logs/verifier and WORLD,
    run the verifier, unmount (a copying backend brings the logs back then); the logs dir lives
    until the block ends. Its dirs are the sandbox's scratch: inside its disk quota."""
    t0 = time.monotonic()
    dirs = {"/tests": write_dir(task.verifier.files, "tests-", sb),
            "/logs/verifier": sb.scratch_dir("logs-"), WORLD: sb.scratch_dir("world-"),
            "/tmp": sb.scratch_dir("tmp-")}
    for sub in ("home", "tmp"):
        (dirs[WORLD] / sub).mkdir()
        (dirs[WORLD] / sub).chmod(0o777)
    with sb.trusted_root(), host_mounts(sb, dirs, lambda target: target == "/tmp",
                                        read_only=frozenset({"/tests"})) as mounted:
        r = sb.exec(verifier_command(task), timeout=task.limits.verifier_timeout_s, cwd=task.workdir,
                    env=verifier_env(task))
        while mounted:
            sb.unmount(mounted.pop())
        yield VerifierRun(r, dirs["/logs/verifier"], time.monotonic() - t0)


# ------------------------------------------------------------------------------ the reward
def read_logs_file(logs: Path, name: str, max_bytes: int) -> bytes | None:
    """A file the verifier (or a script it ran) wrote: None when absent; SandboxError when it is
    a symlink, not a regular file, or over `max_bytes` (never the bytes of a host file)."""
    try:
        return read_beneath(logs, name, max_bytes)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise SandboxError(f"{name}: cannot be read ({e.strerror})") from None


def _parse(name: str, data: bytes) -> tuple[float | None, str | None]:
    if name == "reward.json":
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None, "reward.json is not valid JSON"
        val = obj.get("reward") if isinstance(obj, dict) else obj
        if isinstance(val, bool) or not isinstance(val, int | float):
            return None, f"reward.json has no numeric 'reward' ({str(obj)[:60]!r})"
        return float(val), None
    text = data.decode("utf-8", errors="replace").strip()
    try:
        return float(text), None
    except ValueError:
        return None, f"reward.txt is not a number ({text[:60]!r})"


def read_reward(logs: Path) -> tuple[float | None, str | None]:
    """(reward, None) from reward.txt and/or reward.json (its "reward"); (None, reason) otherwise:
    no file, an unreadable or unparsable one, two that disagree, or a value outside [0, 1]."""
    found: dict[str, float] = {}
    for name in ("reward.json", "reward.txt"):
        try:
            data = read_logs_file(logs, name, REWARD_MAX_BYTES)
        except SandboxError as e:
            return None, str(e)
        if data is None:
            continue
        val, why = _parse(name, data)
        if val is None:
            return None, why
        found[name] = val
    if not found:
        return None, "the verifier wrote no reward file"
    if len(found) == 2 and found["reward.json"] != found["reward.txt"]:  # NaN disagrees too
        return None, (f"reward.json ({found['reward.json']:g}) and reward.txt ({found['reward.txt']:g}) "
                      "disagree: only what the verifier wrote counts")
    reward = next(iter(found.values()))
    if not math.isfinite(reward):
        return None, f"reward is not finite ({reward})"
    if not 0.0 <= reward <= 1.0:
        return None, f"reward {reward:g} is outside [0, 1]"
    return reward, None


LOGS_MAX_ENTRIES = 10_000
"""Most entries of /logs/verifier looked at (a verifier writes a handful)."""


def odd_entry(logs: Path) -> str | None:
    """The first entry of the reward dir that is neither a regular file nor a dir (a FIFO, socket,
    device or symlink: what diverts a write by name), described; None when there is none."""
    with os.scandir(logs) as it:
        for i, e in enumerate(it):
            if i >= LOGS_MAX_ENTRIES:
                return f"more than {LOGS_MAX_ENTRIES} entries"
            mode = e.stat(follow_symlinks=False).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                kind = {stat.S_IFLNK: "a symlink", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}.get(
                    stat.S_IFMT(mode), "a device")
                return f"{e.name!r} is {kind}"
    return None


def killed_by(r: ExecResult) -> int | None:
    """The signal that ended the verifier's top process (its entry script), None when it exited
    on its own. Where the backend cannot tell (`r.signal` None), a status of 128+N counts as
    killed: a test.sh rarely exits so by itself, and an error is masked where a false pass trains."""
    if r.signal is not None:
        return r.signal or None
    return r.exit_code - 128 if 128 < r.exit_code <= 128 + 64 else None


def verdict(logs: Path, r: ExecResult, timeout: float, took: float) -> Verdict:
    """The verdict of a verifier run whose /logs/verifier is the host dir `logs`.

    The reward is what the verifier itself computed: a verifier that did not finish on its own
    (timed out, or its entry script killed by a signal: a program of the agent's it ran can kill
    it after writing reward.txt) is an error, and so is a reward dir holding anything but regular
    files and dirs. Processes it left running were killed before the reward is read (the backend
    does it as the command ends); the output says how many."""
    output = r.output
    if r.leftovers:
        output += (f"\n[clawloop: {r.leftovers} process(es) the verifier left running were killed before its "
                   "reward was read]\n")
    if r.timed_out:
        return Verdict("error", None, f"verifier timed out after {timeout:g}s", output, took)
    sig = killed_by(r)
    if sig is not None:
        return Verdict("error", None, f"the verifier did not exit on its own: its entry script was killed by "
                       f"signal {sig} (exit status {r.exit_code}); only a reward it finished counts", output, took)
    try:
        odd = odd_entry(logs)
    except OSError as e:
        odd = f"cannot be listed ({e.strerror})"
    if odd is not None:
        return Verdict("error", None, f"/logs/verifier: {odd}; the reward dir holds regular files and dirs only",
                       output, took)
    reward, why = read_reward(logs)
    if reward is None:
        return Verdict("error", None, f"{why} (verifier exit status {r.exit_code})", output, took)
    return Verdict("passed" if reward >= PASS_THRESHOLD else "failed", reward, None, output, took)
