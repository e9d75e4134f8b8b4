"""What a shell line needs: the task runtime, package installs, network use.

Dockerfile-lite and the Harbor importer ask here whether a RUN line or a test script can run on
the sandbox's task runtime (python3 with its packages, the host's binaries) or needs the task's
Docker image: `classify` sorts one shell segment into keep / skip (an install the runtime already
satisfies, user management, cleanup) / needs (an unsatisfied install, the network).
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from clawloop.core.tasks.shell_words import Segment, command_words, shell_segments
from clawloop.core.tasks.task import FileSpec
from sandbox.layers import LayerError, LayerSpec
from sandbox.offline_tools import DPKG_LIST, UV_INSTALLER, apt_satisfied

_PIP_ALWAYS = {"pip", "setuptools", "wheel"}
_NETWORK = {"curl", "wget", "npm", "npx", "yarn", "pnpm", "cargo", "gem", "conda", "mamba",
            "micromamba", "pipx", "poetry", "bun", "deno", "rustup", "nvm", "go"}
_USER_MGMT = {"useradd", "adduser", "groupadd", "addgroup", "usermod", "chown", "chgrp",
              "locale-gen", "update-locale"}
ACCOUNT_COMMANDS = frozenset({"useradd", "adduser", "groupadd", "addgroup", "usermod", "groupmod", "gpasswd"})
"""Commands that make or change users and groups: with `layer`, kept and run in the task world
(the host's shadow-utils write its /etc/passwd and /etc/group), with several uids so that the
ownership they set is real."""
OWNER_COMMANDS = frozenset({"chown", "chgrp"})
BASE_ACCOUNTS = frozenset({
    "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data",
    "backup", "list", "irc", "_apt", "nobody", "adm", "tty", "disk", "kmem", "dialout", "fax", "voice", "cdrom",
    "floppy", "tape", "sudo", "audio", "dip", "operator", "src", "shadow", "utmp", "video", "sasl", "plugdev",
    "staff", "users", "nogroup"})
"""Users and groups of Debian's base-passwd, which every Debian or Ubuntu image starts with
(`ACCOUNTS_SETUP` adds them to the task world before its user management)."""
ACCOUNTS_SETUP = """# clawloop: a Debian image's base accounts (base-passwd) and /run, before the Dockerfile's user management
mkdir -p /run
for f in passwd group; do
  m=/usr/share/base-passwd/$f.master
  [ -r "$m" ] || continue
  while IFS= read -r line; do
    grep -q "^${line%%:*}:" "/etc/$f" || printf '%s\\n' "$line" >> "/etc/$f"
  done < "$m"
done"""
"""The first setup command of a task whose Dockerfile manages users: `usermod -aG sudo`,
`chown www-data` and adduser's lock in /run work as in the image."""
_PKG_MANAGERS = {"apt-get", "apt", "aptitude", "apk", "yum", "dnf", "microdnf"}


# ---------------------------------------------------------------------------------- runtime
@dataclass(frozen=True)
class Runtime:
    """What the sandbox offers without an image: python packages and binaries on PATH."""

    python_packages: frozenset[str]
    """Normalized distribution names installed in the task runtime."""
    binaries: frozenset[str]
    """Executable names in /usr/bin, /bin, /usr/sbin, /sbin and the runtime's bin/."""
    apt_packages: frozenset[str] = frozenset()
    """apt packages installed on the host (what the offline apt-get stand-in accepts)."""

    def has_python(self, dist: str) -> bool:
        # uv: the runtime's offline stand-in (sandbox/offline_tools.py) serves uv/uvx from the
        # runtime; a real uv would try the network for `uv run --with X`, which the sandbox lacks.
        return _norm(dist) in self.python_packages or _norm(dist) in _PIP_ALWAYS or (
            _norm(dist) == "uv" and "uv" in self.binaries)

    def has_binary(self, name: str) -> bool:
        return name in self.binaries

    def has_apt(self, pkg: str) -> bool:
        """Whether an offline `apt-get install pkg` succeeds (sandbox.offline_tools decides)."""
        return apt_satisfied(pkg, self.apt_packages.__contains__, self.has_python)


def host_apt_packages(runtime_dir: Path | None = None) -> frozenset[str]:
    """The host's installed apt packages: the runtime's list (what its apt-get stand-in reads,
    written when the runtime was built), else `dpkg-query`; empty where there is no dpkg."""
    listed = runtime_dir / "bin" / DPKG_LIST if runtime_dir else None
    if listed is not None and listed.is_file():
        return frozenset(x.strip() for x in listed.read_text().splitlines() if x.strip())
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package}\\n"],
                             capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(w[1] for w in map(str.split, out.splitlines()) if len(w) == 2 and w[0] == "ii")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def default_runtime_dir() -> Path | None:
    """The task runtime venv: $CLAWLOOP_RUNTIME, else `.runtime/` of the checkout, else None."""
    env = os.environ.get("CLAWLOOP_RUNTIME")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[3] / ".runtime"
    return here if here.is_dir() else None


@functools.lru_cache(maxsize=8)
def detect_runtime(runtime_dir: Path | None = None) -> Runtime:
    """Scan the runtime venv's site-packages and the host's bin directories (cached)."""
    runtime_dir = runtime_dir or default_runtime_dir()
    dists: set[str] = set()
    bins: set[str] = set()
    if runtime_dir is not None and runtime_dir.is_dir():
        for site in runtime_dir.glob("lib/python*/site-packages"):
            for entry in site.iterdir():
                if entry.name.endswith((".dist-info", ".egg-info")):
                    dists.add(_norm(entry.name.split("-")[0]))
        if (runtime_dir / "bin").is_dir():
            bins.update(os.listdir(runtime_dir / "bin"))
    else:  # the packages the runtime is built from
        req = Path(__file__).resolve().parents[3] / "sandbox" / "runtime-requirements.txt"
        if req.exists():
            dists.update(_norm(x.split("#")[0].strip()) for x in req.read_text().splitlines()
                         if x.split("#")[0].strip())
    for d in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        if os.path.isdir(d):
            bins.update(os.listdir(d))
    if "python3" in bins:
        bins.add("python")
    return Runtime(frozenset(dists), frozenset(bins), host_apt_packages(runtime_dir))


@dataclass
class LayerWants:
    """Registry packages the runtime lacks, to be built into environment layers
    (sandbox/layers.py) instead of needing the task's image: apt names and pip requirements."""

    apt: list[str] = field(default_factory=list)
    pip: list[str] = field(default_factory=list)
    accounts: set[str] = field(default_factory=set)
    """Users and groups the script creates (replayed in the task world)."""
    uids: str | None = None
    """Why the task needs several uids: its first user-management line (None: it has none)."""

    def merge(self, other: LayerWants) -> None:
        """Add what `other` wants (a Dockerfile's wants into the task's, before its tests')."""
        for kind in ("apt", "pip"):
            for p in getattr(other, kind):
                self.add(kind, p)
        self.accounts |= other.accounts
        self.uids = self.uids or other.uids

    def manage_accounts(self, words: list[str], segment: str) -> None:
        """Note a kept user-management command: the names it creates, and that the task needs uids."""
        self.accounts.update(created_accounts(words))
        self.uids = self.uids or f"user management ({segment.strip().splitlines()[0][:60]})"

    def add(self, kind: str, package: str) -> bool:
        """Record `package` if it is a plain name a layer may hold (False: refused, e.g. `$PKG`)."""
        try:
            LayerSpec(kind, (package,))
        except LayerError:
            return False
        wanted = self.apt if kind == "apt" else self.pip
        name = _norm(re.split(r"[\[<>=!~; @:]", package, maxsplit=1)[0])
        if all(_norm(re.split(r"[\[<>=!~; @:]", w, maxsplit=1)[0]) != name for w in wanted):
            wanted.append(package)  # the first pin of a name stands (the Dockerfile's, before the tests')
        return True

    def to_json(self) -> list[dict[str, object]]:
        """The layer specs, one per registry, in a fixed order (apt first: pip may need its libraries)."""
        return [{"kind": k, "packages": sorted(v)} for k, v in (("apt", self.apt), ("pip", self.pip)) if v]


def _pkg_args(words: list[str], with_value: tuple[str, ...] = ("-o", "-t")) -> list[str]:
    args, skip = [], False
    for w in words:
        if skip:
            skip = False
        elif w in with_value:
            skip = True
        elif not w.startswith("-"):
            args.append(w)
    return args


def _check_pip(args: list[str], runtime: Runtime, context: dict[str, FileSpec], cwd: str = "/",
               layer: LayerWants | None = None) -> str | None:
    """Why the pip arguments are not satisfied by the runtime (None when they are). A `-r FILE`
    is looked up among `context` as an absolute path in the image (a COPY destination, relative
    ones from `cwd`), then as a build-context path."""
    reqs: list[str] = []
    it = iter(args)
    for a in it:
        if a in ("-r", "--requirement"):
            rel = next(it, "")
            spec = context.get(posixpath.normpath(posixpath.join(cwd, rel))) \
                or context.get(posixpath.normpath(rel)) or context.get(posixpath.basename(rel))
            if spec is None:
                return f"pip requirements file {rel!r} is not in the build context"
            reqs += [x.split("#")[0].strip() for x in spec.data().decode(errors="replace").splitlines()]
        elif a in ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c",
                   "--constraint", "--target", "-t", "--prefix", "--python", "-p"):
            next(it, None)
        elif a.startswith("-"):
            continue
        else:
            reqs.append(a)
    for r in filter(None, reqs):
        if r.startswith("-"):
            continue
        if r.startswith((".", "/", "git+", "http")) or "$" in r:
            return f"pip install of {r!r} needs the image"
        name = re.split(r"[\[<>=!~; @]", r, maxsplit=1)[0]
        if not runtime.has_python(name) and not (layer is not None and layer.add("pip", _requirement(r))):
            return f"python package {name!r} is not in the task runtime"
    return None


def _requirement(line: str) -> str:
    """`name[extra]==1.0` of a requirement line (markers, hashes and continuations dropped)."""
    return line.split(";", 1)[0].split()[0].rstrip("\\") if line.split() else line


def _check_uv(words: list[str], runtime: Runtime, layer: LayerWants | None = None) -> tuple[str, str | None]:
    """uvx/uv run the runtime's tools offline (sandbox.offline_tools): every `--with`/`--from`
    package must be in the runtime."""
    wanted, it = [], iter(words[1:])
    for w in it:
        if w in ("--with", "-w", "--from"):
            wanted += next(it, "").split(",")
        elif w.startswith(("--with=", "--from=")):
            wanted += w.split("=", 1)[1].split(",")
    if words[0].endswith("uvx") or words[1:2] == ["run"] or words[1:3] == ["tool", "run"]:
        tool = next((w for w in words[1:] if not w.startswith("-") and w not in wanted and w not in ("run", "tool")
                     and not re.fullmatch(r"[0-9.]+", w)), "")
        if tool:
            wanted.append(tool)
    for r in filter(None, wanted):
        name = re.split(r"[\[<>=!~; @]", r, maxsplit=1)[0]
        if name and not runtime.has_python(name) and not runtime.has_binary(name) \
                and not (layer is not None and r != tool_req(words, wanted) and layer.add("pip", _requirement(r))):
            return "needs", f"python package {name!r} is not in the task runtime (for {words[0]})"
    return "keep", None


def tool_req(words: list[str], wanted: list[str]) -> str | None:
    """The tool uvx runs (the last of `wanted` when it was appended as the command), else None:
    a layer may add `--with` packages, not the command itself (it must be on PATH)."""
    if words[0].endswith("uvx") or words[1:2] == ["run"] or words[1:3] == ["tool", "run"]:
        return wanted[-1] if wanted else None
    return None


def classify(segment: str, runtime: Runtime, context: dict[str, FileSpec] | None = None,
             cwd: str = "/", layer: LayerWants | None = None) -> tuple[str, str | None]:
    """("keep" | "skip" | "needs", reason) for one shell segment run in `cwd`. With `layer`, an
    apt or pip install the runtime lacks is recorded there (a skip: the layer provides it)."""
    words = command_words(segment)
    if not words:
        return "keep", None
    cmd = posixpath.basename(words[0])
    context = context or {}
    if cmd in _PKG_MANAGERS:
        sub = next((w for w in words[1:] if not w.startswith("-")), "")
        if sub not in ("install", "add"):
            return "skip", f"package manager: {segment[:60]}"
        layered = []
        for pkg in _pkg_args(words[words.index(sub) + 1:]):
            if runtime.has_apt(pkg):
                continue
            if layer is not None and cmd in ("apt-get", "apt") and layer.add("apt", pkg):
                layered.append(pkg)
                continue
            return "needs", f"apt package {pkg!r} is not installed on this host"
        if layered:
            return "skip", f"layer (apt): {' '.join(layered)}"
        return "skip", f"satisfied: {segment[:60]}"
    pip = None
    if re.fullmatch(r"pip[0-9.]*", cmd):
        pip = words[1:]
    elif re.fullmatch(r"python[0-9.]*", cmd) and words[1:3] == ["-m", "pip"]:
        pip = words[3:]
    elif cmd == "uv" and words[1:2] == ["pip"]:
        pip = words[2:]
    elif cmd in ("uv", "uvx"):
        return _check_uv(words, runtime, layer)
    if cmd in ("curl", "wget") and any(UV_INSTALLER.match(w) for w in words):
        return "keep", None  # the runtime's stand-in "installs" uv: wrappers of its own uv/uvx
    if pip is not None:
        sub = next((w for w in pip if not w.startswith("-")), "")
        if sub != "install":
            return "skip", f"pip: {segment[:60]}"
        before = len(layer.pip) if layer is not None else 0
        reason = _check_pip(pip[pip.index(sub) + 1:], runtime, context, cwd, layer)
        if reason:
            return "needs", reason
        if layer is not None and len(layer.pip) > before:
            return "skip", f"layer (pip): {' '.join(layer.pip[before:])}"
        return "skip", f"satisfied: {segment[:60]}"
    if cmd in _NETWORK or (cmd == "git" and "clone" in words[1:3]):
        return "needs", f"needs the network: {segment.splitlines()[0][:80]}"
    if cmd == "ln" and len(words) >= 3 and words[-1].startswith(("/usr/bin/", "/usr/local/bin/", "/bin/")) \
            and runtime.has_binary(posixpath.basename(words[-1])):
        # /usr stays the host's (read-only); the name already exists, e.g. `python` from the runtime
        return "skip", f"satisfied: {segment[:60]}"
    if layer is not None and cmd in ACCOUNT_COMMANDS:
        layer.manage_accounts(words, segment)
        return "keep", None
    if layer is not None and cmd in OWNER_COMMANDS:
        names = owner_names(cmd, words)
        if names is not None and all(n in ("root", "0") for n in names):
            return "keep", None  # root's files need no other uid
        if names is not None and all(n.isdigit() or n in layer.accounts or n in BASE_ACCOUNTS for n in names):
            layer.manage_accounts(words, segment)
            return "keep", None
    if cmd in _USER_MGMT:
        return "skip", f"one user in the sandbox: {segment[:60]}"
    if cmd == "rm" and all(w.startswith(("-", "/var/lib/apt", "/var/cache", "/root/.cache", "/tmp/"))
                           for w in words[1:]):
        return "skip", f"cleanup: {segment[:60]}"
    return "keep", None


_VALUE_OPTS = {
    "useradd": frozenset({"-b", "--base-dir", "-c", "--comment", "-d", "--home-dir", "-e", "--expiredate", "-f",
                          "--inactive", "-g", "--gid", "-G", "--groups", "-k", "--skel", "-K", "--key", "-p",
                          "--password", "-R", "--root", "-P", "--prefix", "-s", "--shell", "-u", "--uid", "-Z",
                          "--selinux-user"}),
    "groupadd": frozenset({"-g", "--gid", "-K", "--key", "-p", "--password", "-R", "--root", "-P", "--prefix"}),
    "adduser": frozenset({"--home", "--shell", "--uid", "--gid", "--ingroup", "--gecos", "--comment", "--conf",
                          "--firstuid", "--lastuid", "--firstgid", "--lastgid", "-c", "-u", "-g"}),
}
"""Options that take a value, per command (addgroup reads as adduser)."""


def created_accounts(words: list[str]) -> set[str]:
    """The name a useradd/adduser/groupadd/addgroup line creates: its first operand (`adduser
    NAME GROUP` adds an existing user to an existing group)."""
    cmd = posixpath.basename(words[0]) if words else ""
    if cmd not in ("useradd", "adduser", "groupadd", "addgroup"):
        return set()
    value_opts = _VALUE_OPTS["adduser" if cmd == "addgroup" else cmd]
    operands, it = [], iter(words[1:])
    for w in it:
        if w in value_opts:
            next(it, None)
        elif not w.startswith("-"):
            operands.append(w)
    return set(operands[:1])  # useradd's group of the user's name (USERGROUPS_ENAB) has that name too


def owner_names(cmd: str, words: list[str]) -> list[str] | None:
    """The user and group names of a chown/chgrp line (`USER[:GROUP]`, `:GROUP`, `USER.GROUP`), or
    None when they cannot be read (`--reference`, a variable)."""
    operands = [w for w in words[1:] if not w.startswith("-")]
    if any(w.startswith("--reference") for w in words) or not operands or "$" in operands[0]:
        return None
    if cmd == "chgrp":
        return [operands[0]]
    spec = operands[0]
    user, _, group = spec.partition(":") if ":" in spec else spec.partition(".")
    return [n for n in (user, group) if n]


def check_script(script: str, runtime: Runtime, layer: LayerWants | None = None) -> str | None:
    """Why a script (e.g. tests/test.sh) cannot run on the task runtime, or None (with `layer`:
    its installs the runtime lacks are recorded there)."""
    for seg in shell_segments(script):
        kind, reason = classify(seg.text, runtime, layer=layer)
        if kind == "needs":
            return reason
    return None


def filter_run(command: str, runtime: Runtime, context: dict[str, FileSpec],
               cwd: str = "/", layer: LayerWants | None = None) -> tuple[str, list[str], str | None]:
    """Drop satisfied installs from one RUN command run in `cwd`: (kept command, skipped notes,
    needs). `context` maps build-context paths and absolute image paths (COPY destinations) to files."""
    kept: list[Segment] = []
    skipped: list[str] = []
    for seg in shell_segments(command):
        kind, reason = classify(seg.text, runtime, context, cwd, layer)
        if kind == "needs":
            return "", skipped, reason
        if kind == "skip":
            skipped.append(reason or seg.text)
        else:
            kept.append(seg)
    text = ""
    for k, seg in enumerate(kept):
        sep = seg.sep if k < len(kept) - 1 else ""
        text += seg.text + ({"\n": "\n", "": ""}.get(sep, f" {sep} "))
    return text.strip(), skipped, None
