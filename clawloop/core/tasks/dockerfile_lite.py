"""Dockerfile-lite: run a Harbor task's Dockerfile without Docker.

The subset that maps onto a Task: COPY/ADD of local files (→ Task.files at their destination),
WORKDIR (→ Task.workdir), ENV (→ Task.env), RUN lines of plain shell (→ Task.setup). Package
installs (apt-get, pip, ...) are checked against the sandbox's task runtime (its python
packages and the host's binaries): satisfied ones are dropped; with `layers`, apt and pip
packages the runtime lacks are recorded for environment layers (sandbox/layers.py, built from
the registries at run time); anything else unsatisfied (or that needs the network) sets
`needs_image` with the reason, and the task runs only on docker. With `layers`, user management
(useradd, groupadd, adduser, usermod, chown to a known user) is kept and replayed in the task
world, which then needs several uids (`LayerWants.uids`), after `ACCOUNTS_SETUP` gives it a
Debian image's base accounts.
FROM is recorded, and a base image known to set a WORKDIR (`BASE_WORKDIRS`) starts the build
there, as Docker does; CMD, EXPOSE, USER, LABEL and friends have no effect here.
"""

from __future__ import annotations

import base64
import fnmatch
import io
import json
import lzma
import posixpath
import re
import shlex
import tarfile
import zlib
from dataclasses import dataclass, field

from clawloop.core.tasks.file_tree import MAX_TASK_BYTES, ReadBudget
from clawloop.core.tasks.shell_lite import (  # noqa: F401  (re-exported: the runtime checks live there)
    ACCOUNTS_SETUP,
    LayerWants,
    Runtime,
    check_script,
    classify,
    default_runtime_dir,
    detect_runtime,
    filter_run,
)
from clawloop.core.tasks.shell_words import HEREDOC
from clawloop.core.tasks.task import FileSpec, mode_problem
from clawloop.errors import ClawloopError

TASK_FAULT = " (`docker build` of that context fails on this line too: the task's fault)"
"""Said of a COPY whose source is not in the build context: Harbor builds environment/ (a
Terminal-Bench 1 task: its own dir), so Docker refuses the same line; clawloop is not the cause."""
DEFAULT_WORKDIR = "/workspace"
"""Task.workdir when neither the Dockerfile nor its base image sets a WORKDIR."""
BASE_WORKDIRS: tuple[tuple[str, str], ...] = (
    ("ghcr.io/laude-institute/t-bench/", "/app"),
)
"""(image name prefix, WORKDIR) of base images known to set one. Terminal-Bench's bases
(python-3-13, ubuntu-24-04, ...: terminal-bench docker/base-images) end in `WORKDIR /app`, and
tasks built on them say nothing more: their `COPY x .`, solution and tests assume /app. Only an
image's own name decides (a tag or digest does not move its WORKDIR)."""

MAX_EXPANSION_BYTES = 2 << 20
"""Most bytes `$NAME` references may substitute in one Dockerfile (ARG, ENV, WORKDIR, COPY, FROM
together). Expansion is eager, so `ENV A2=$A1$A1…` a few lines deep would otherwise grow to
gigabytes from a few hundred bytes; 2 MiB is Linux's ARG_MAX under the default stack, past which
a task's environment could not exec a program anyway."""

_IGNORED = {"CMD", "ENTRYPOINT", "EXPOSE", "USER", "LABEL", "MAINTAINER", "HEALTHCHECK",
            "STOPSIGNAL", "SHELL", "VOLUME", "ONBUILD"}
_ARCHIVE = re.compile(r"\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz)$")


# ------------------------------------------------------------------------------- Dockerfile
@dataclass
class LiteResult:
    """What a Dockerfile means for a Task."""

    base_image: str | None = None
    files: dict[str, FileSpec] = field(default_factory=dict)
    copy_sources: dict[str, str] = field(default_factory=dict)
    """Destination path → context-relative source, for plain COPY/ADD of context files."""
    setup: list[str] = field(default_factory=list)
    workdir: str = DEFAULT_WORKDIR
    env: dict[str, str] = field(default_factory=dict)
    needs_image: str | None = None
    skipped: list[str] = field(default_factory=list)
    """Install lines the runtime already satisfies, and user management (without `layers`)."""
    ignored: list[str] = field(default_factory=list)
    """Instructions without effect outside Docker (CMD, EXPOSE, USER, ENV PATH, ...)."""
    layer: LayerWants | None = None
    """With `parse_dockerfile(layers=True)`: the apt and pip installs the runtime lacks, which
    environment layers provide (sandbox/layers.py) instead of the image."""


def _logical_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, KEYWORD, rest) per instruction: continuations joined, heredoc bodies kept.

    `dockerfile-parse` splits instructions (continuations, comments inside them, parser
    directives); it knows no heredocs (`RUN <<EOF`), so their bodies are read here from the raw
    lines and the entries it made of them are dropped.
    """
    from dockerfile_parse import DockerfileParser

    lines = text.splitlines()
    parser = DockerfileParser(fileobj=io.BytesIO(text.encode("utf-8", errors="surrogateescape")),
                              env_replace=False)
    out: list[tuple[int, str, str]] = []
    consumed = -1  # last raw line (0-based) that belongs to a heredoc body
    for s in parser.structure:
        if s["startline"] <= consumed or s["instruction"] == "COMMENT":
            continue
        raw = lines[s["startline"]].lstrip()
        kw = raw.split(None, 1)[0].upper() if raw else s["instruction"]
        joined = re.sub(r"[ \t]*\n[ \t]*", " ", s["value"]).strip()
        i = s["endline"] + 1
        for m in HEREDOC.finditer(joined):  # heredoc bodies follow the instruction
            word, strip = m.group(3), m.group(1) == "-"
            body = []
            while i < len(lines):
                ln = lines[i]
                i += 1
                if (ln.lstrip("\t") if strip else ln) == word:
                    break
                body.append(ln)
            joined += "\n" + "\n".join(body + [word])
        consumed = i - 1
        out.append((s["startline"] + 1, kw, joined))
    return out


def base_workdir(image: str | None) -> str | None:
    """The WORKDIR a known base image sets (`BASE_WORKDIRS`), else None."""
    if not image:
        return None
    name = image.split("@", 1)[0].lower()
    return next((wd for prefix, wd in BASE_WORKDIRS if name.startswith(prefix)), None)


class _Variables(dict[str, str]):
    """ARG and ENV values of one build, with what `$NAME` references may still substitute."""

    def __init__(self) -> None:
        super().__init__()
        self.left = MAX_EXPANSION_BYTES


def _expand(value: str, variables: _Variables) -> str:
    """`value` with `$NAME`, `${NAME}`, `${NAME:-x}`, `${NAME:+x}` substituted; every substituted
    byte counts against the build's MAX_EXPANSION_BYTES (ValueError past it)."""
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        val = variables.get(name, "")
        op, arg = m.group(2) or "", ""
        if op:
            arg = op[2:]
            if op.startswith(":-"):
                val = val or arg
            elif op.startswith(":+"):
                val = arg if val else ""
        variables.left -= len(val)
        if variables.left < 0:
            raise ValueError(f"variables expand to more than {MAX_EXPANSION_BYTES >> 20} MiB in all "
                             "(a value that names the one before it, again and again?)")
        return val

    def escaped(m: re.Match[str]) -> str:
        return "$" if m.group(0) == "\\$" else sub(m)

    return re.sub(r"\\\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:[-+][^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)", escaped, value)


def _json_or_words(rest: str) -> list[str]:
    if rest.startswith("["):
        try:
            val = json.loads(rest)
            if isinstance(val, list):
                return [str(x) for x in val]
        except json.JSONDecodeError:
            pass
    return shlex.split(rest, posix=True)


def _size(spec: FileSpec) -> int:
    """About the bytes of `spec` (base64 counted as what it decodes to), without decoding it."""
    return len(spec.content) * 3 // 4 if spec.encoding == "base64" else len(spec.content)


@dataclass
class _Copied:
    files: dict[str, tuple[FileSpec, str | None]] = field(default_factory=dict)
    """Destination → (content, context source or None for heredocs and archive members)."""
    dirs: list[str] = field(default_factory=list)
    """Empty directories created at their destination."""
    needs: str | None = None
    budget: ReadBudget = field(default_factory=ReadBudget)
    where: str = "Dockerfile"

    def put(self, dest: str, src: str | None, spec: FileSpec, mode: int | None) -> None:
        self.budget.take(f"{self.where}: {dest}", _size(spec))
        self.files[posixpath.normpath(dest)] = (spec if mode is None else spec.model_copy(update={"mode": mode}), src)

    def put_dir(self, src: str, dest: str, context: dict[str, FileSpec], dirs: frozenset[str],
                mode: int | None) -> None:
        prefix = "" if src == "." else src + "/"
        for k in sorted(context):
            if k.startswith(prefix):
                self.put(posixpath.join(dest, k[len(prefix):]), k, context[k], mode)
        self.dirs += [posixpath.normpath(posixpath.join(dest, d[len(prefix):]))
                      for d in sorted(dirs) if d.startswith(prefix) or (src == d)]


def _copy(kw: str, rest: str, cur_wd: str, variables: _Variables, context: dict[str, FileSpec],
          dirs: frozenset[str], where: str, at: str, budget: ReadBudget) -> _Copied:
    """COPY/ADD: errors name `where`, needs_image reasons `at`; what is placed counts against
    `budget` (the same caps as the task's own files: a file copied again is bytes again)."""
    out = _Copied(budget=budget, where=where)
    first, _, body = rest.partition("\n")
    m = re.match(r"((?:--\S+\s+)*)(.*)$", first)
    flags = {w.split("=", 1)[0]: (w.split("=", 1) + [""])[1] for w in m.group(1).split()}  # type: ignore[union-attr]
    args = [_expand(w, variables) for w in _json_or_words(m.group(2))]  # type: ignore[union-attr]
    if "--from" in flags:
        out.needs = f"{at}: {kw} --from (multi-stage build)"
        return out
    if len(args) < 2:
        raise ClawloopError(f"{where}: {kw} needs a source and a destination")
    mode = int(flags["--chmod"], 8) if flags.get("--chmod", "").isdigit() else None
    *srcs, raw = args
    dest = posixpath.join(cur_wd, raw)
    as_dir = raw.endswith("/") or raw in (".", "..") or raw.endswith(("/.", "/..")) or len(srcs) > 1
    heredocs = HEREDOC.findall(first)
    if heredocs:  # COPY <<EOF /path: the body is the file
        lines = body.split("\n")
        lines = lines[:-1] if lines and lines[-1] == heredocs[0][2] else lines
        out.put(dest, None, FileSpec.of("\n".join(lines) + "\n"), mode)
        return out
    for src in srcs:
        if re.match(r"^[a-z]+://", src):
            out.needs = f"{at}: {kw} of a URL ({src})"
            return out
        src_n = posixpath.normpath(src.lstrip("/")) if src not in (".", "./") else "."
        if any(ch in src_n for ch in "*?["):
            depth = src_n.count("/") + 1
            matches = sorted(k for k in context if k.count("/") + 1 == depth and fnmatch.fnmatch(k, src_n))
            tops = {"/".join(k.split("/")[:depth]) for k in context if k.count("/") >= depth}
            tops |= {"/".join(d.split("/")[:depth]) for d in dirs if d.count("/") >= depth - 1}
            subdirs = sorted(t for t in tops if fnmatch.fnmatch(t, src_n))
            if not matches and not subdirs:
                raise ClawloopError(f"{where}: {kw} source {src!r} matches nothing in the build context{TASK_FAULT}")
            for k in matches:
                out.put(posixpath.join(dest, posixpath.basename(k)), k, context[k], mode)
            for d in subdirs:
                out.put_dir(d, dest, context, dirs, mode)
        elif src_n in context:
            spec = context[src_n]
            if kw == "ADD" and _ARCHIVE.search(src_n):
                _extract(out, spec, dest, f"{where}: ADD {src}")
            else:
                out.put(posixpath.join(dest, posixpath.basename(src_n)) if as_dir else dest, src_n, spec, mode)
        elif src_n == "." or src_n in dirs or any(k.startswith(src_n + "/") for k in [*context, *dirs]):
            out.put_dir(src_n, dest, context, dirs, mode)
        else:
            raise ClawloopError(f"{where}: {kw} source {src!r} is not in the build context{TASK_FAULT}")
    return out


def _extract(out: _Copied, spec: FileSpec, dest: str, where: str) -> None:
    """The archive's files at `dest`. The caps apply to what it unpacks to, not its own size (a
    40 KiB .tar.gz can hold 40 MiB of zeros): each member's size is checked from its header
    before it is read, and the unpacked stream, headers and skipped members included, may not
    pass MAX_TASK_BYTES (so neither many small members nor one skipped huge one slip through)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(spec.data())) as tar:
            for m in tar:  # headers one at a time: nothing past a refused member is decompressed
                if m.offset_data + m.size > MAX_TASK_BYTES:
                    raise ClawloopError(f"{where}: unpacks to more than {MAX_TASK_BYTES >> 20} MiB")
                if m.isfile() and ".." not in m.name.split("/"):
                    if why := mode_problem(m.mode & 0o7777):
                        raise ClawloopError(f"{where}: {m.name}: mode {why}")
                    out.budget.take(f"{where}: {m.name}", m.size)  # before a byte of it is read
                    data = tar.extractfile(m).read(m.size)  # type: ignore[union-attr]
                    spec = FileSpec.of(data, m.mode & 0o7777)
                    out.files[posixpath.normpath(posixpath.join(dest, m.name))] = (spec, None)
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as e:
        raise ClawloopError(f"{where}: archive cannot be read ({e})") from None


def write_files_command(files: dict[str, FileSpec]) -> str:
    """A setup command that writes files (for a COPY that comes after a RUN: order matters)."""
    lines = ["set -e"]
    for dest, spec in files.items():
        q = shlex.quote(dest)
        b64 = base64.encodebytes(spec.data()).decode("ascii")
        lines.append(f"mkdir -p {shlex.quote(posixpath.dirname(dest))}\n"
                     f"base64 -d > {q} <<'CLAWLOOP_B64'\n{b64}CLAWLOOP_B64\nchmod {spec.mode:o} {q}")
    return "\n".join(lines)


def parse_dockerfile(text: str, context: dict[str, FileSpec], runtime: Runtime | None = None,
                     where: str = "Dockerfile", context_dirs: frozenset[str] = frozenset(),
                     name: str | None = None, layers: bool = False) -> LiteResult:
    """Interpret a Dockerfile against its build context (relative path → file; empty dirs apart).

    Files COPYed before the first RUN that survives become Task.files; a COPY after such a RUN
    becomes a setup command writing its files, so the order the Dockerfile meant is kept.
    `where` prefixes error messages; `name` (default: `where`) the needs_image reasons, which
    are content and so must not depend on where the task lies. `layers`: installs of registry
    packages the runtime lacks go to `LiteResult.layer` instead of `needs_image`.
    """
    lr = LiteResult(layer=LayerWants() if layers else None)
    build = _Build(context, runtime or detect_runtime(), context_dirs, lr)
    for lineno, kw, rest in _logical_lines(text):
        try:
            build.instruction(kw, rest, f"{where}:{lineno}", f"{name or where}:{lineno}")
        except ValueError as e:
            raise ClawloopError(f"{where}:{lineno}: {kw}: {e}") from None
    return build.finish()


class _Build:
    """A Dockerfile's instructions applied one by one to the LiteResult `lr`."""

    def __init__(self, context: dict[str, FileSpec], runtime: Runtime, context_dirs: frozenset[str],
                 lr: LiteResult) -> None:
        self.context, self.runtime, self.context_dirs, self.lr = context, runtime, context_dirs, lr
        self.cur_wd = "/"
        self.variables = _Variables()
        self.placed = ReadBudget()  # the bytes COPY and ADD put in the task (an archive's members too)
        self.runs: list[tuple[str | None, str]] = []  # (dir the command ran in, or None: any), command
        self.ran = False
        self.froms = 0
        self.late_files: dict[str, FileSpec] = {}  # every COPY destination so far (for `pip install -r`)

    def instruction(self, kw: str, rest: str, where: str, at: str) -> None:
        """Apply one instruction; `where` names its line in errors, `at` in needs_image reasons."""
        lr = self.lr
        if kw == "FROM":
            self.froms += 1
            if self.froms == 1:
                words = [w for w in rest.split() if not w.startswith("--")]  # --platform=...
                lr.base_image = _expand(words[0], self.variables) if words else None
                wd = base_workdir(lr.base_image)
                if wd is not None:  # the image's WORKDIR: where relative COPYs, RUNs and the task start
                    self.cur_wd = lr.workdir = wd
            else:
                lr.needs_image = lr.needs_image or f"{at}: multi-stage build"
        elif kw == "ARG":
            arg, eq, default = rest.partition("=")
            value = _expand(default.strip().strip('"\''), self.variables) if eq else ""
            self.variables.setdefault(arg.strip(), value)
        elif kw == "ENV":
            self.env(rest)
        elif kw == "WORKDIR":
            path = _expand(rest.strip().strip('"'), self.variables)
            self.cur_wd = posixpath.normpath(posixpath.join(self.cur_wd, path))
            lr.workdir = self.cur_wd
        elif kw in ("COPY", "ADD"):
            self.copy(kw, rest, where, at)
        elif kw == "RUN":
            self.run(rest, at)
        elif kw in _IGNORED:
            lr.ignored.append(kw)
        else:
            raise ClawloopError(f"{where}: unknown instruction {kw!r}")

    def env(self, rest: str) -> None:
        words = shlex.split(rest)
        pairs = ([tuple(w.split("=", 1)) for w in words] if words and "=" in words[0]
                 else [(words[0], rest.split(None, 1)[1] if len(words) > 1 else "")] if words else [])
        for k, v in pairs:
            v = _expand(v, self.variables)
            self.variables[k] = v
            if k == "PATH":
                self.lr.ignored.append(f"ENV PATH={v}")
            else:
                self.lr.env[k] = v

    def copy(self, kw: str, rest: str, where: str, at: str) -> None:
        lr = self.lr
        c = _copy(kw, rest, self.cur_wd, self.variables, self.context, self.context_dirs, where, at, self.placed)
        lr.needs_image = lr.needs_image or c.needs
        self.late_files.update({d: f for d, (f, _) in c.files.items()})
        if self.ran:  # after a RUN: write the files at this point of the setup
            if c.files:
                self.runs.append((None, write_files_command({d: f for d, (f, _) in c.files.items()})))
        else:
            for d, (f, src) in c.files.items():
                lr.files[d] = f
                if src is not None:
                    lr.copy_sources[d] = src
                else:
                    lr.copy_sources.pop(d, None)
        if c.dirs:
            self.runs.append((None, "mkdir -p " + " ".join(shlex.quote(d) for d in c.dirs)))

    def run(self, rest: str, at: str) -> None:
        first, _, body = rest.partition("\n")
        if re.match(r"^(--\S+\s+)*<<", first):  # RUN <<EOF: the body is the script
            lines = body.split("\n")
            cmd = "\n".join(lines[:-1])
        else:
            words = first.split()
            while words and words[0].startswith("--"):  # --mount, --network
                words.pop(0)
            cmd = " ".join(words) + ("\n" + body if body else "")
            if cmd.startswith("["):
                cmd = shlex.join(_json_or_words(cmd))
        layer = self.lr.layer
        had_uids = layer.uids if layer is not None else None
        kept, skipped, needs = filter_run(cmd, self.runtime, {**self.context, **self.late_files}, self.cur_wd,
                                          layer)
        if layer is not None and layer.uids and not had_uids:  # the first user management: name its line
            layer.uids = f"{at}: {layer.uids}"
        self.lr.skipped += skipped
        if needs:
            self.lr.needs_image = self.lr.needs_image or f"{at}: {needs}"
        elif kept:
            self.runs.append((self.cur_wd, kept))
            self.ran = True

    def finish(self) -> LiteResult:
        """The setup commands: RUN lines ran in the WORKDIR current at the time; setup runs in the
        final workdir."""
        lr = self.lr
        if lr.layer is not None and lr.layer.uids and not lr.needs_image:
            lr.setup.append(ACCOUNTS_SETUP)  # the accounts the Dockerfile's user management assumes
        for d, cmd in self.runs:
            q = shlex.quote(d or "")
            lr.setup.append(cmd if d is None or d == lr.workdir else f"cd {q} && {cmd}" if d == "/"
                            else f"mkdir -p {q} && cd {q} && {cmd}")
        return lr
