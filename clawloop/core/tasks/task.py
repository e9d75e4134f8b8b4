"""The Task record: frozen, serializable, identified by the sha256 of its content.

Two tasks with the same content have the same id whatever their provenance, so pools dedupe
across iterations. Behaviour (running, validating, converting) lives elsewhere.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

SCHEMA_VERSION = 1

# Fields that are not content: they do not enter the id.
_NON_CONTENT = {"id", "provenance", "metadata", "source", "tags"}


MAX_PATH_BYTES = 1024
"""Longest path (UTF-8 bytes) a task may name: a quarter of Linux's PATH_MAX (4096), which leaves
the rest to the directory it is exported or staged under (a 3,000-deep path failed the export
with ENAMETOOLONG); the longest in benchmarks/ is under 100."""
MAX_NESTING = 64
"""Deepest nesting of a task's metadata, and of the TOML, YAML or JSON it is read from (the
deepest in benchmarks/ is 7): the readers and writers that walk it recurse (a 900-deep record
broke `tasks export`, a 1,200-deep dotted TOML key the import)."""


def path_problem(p: str, *, absolute: bool = False) -> str | None:
    """Why `p` cannot name a file of a task (None when it can). Task input names paths that
    clawloop writes on the host (export, the verifier's staging) and in the sandbox: one that is
    empty, holds a NUL, has a '..' component or the wrong prefix ('/' where a relative path is
    wanted) could leave its directory, so the model refuses it once, at load; so is one longer
    than MAX_PATH_BYTES."""
    if not isinstance(p, str) or not p or p in ("/", "."):
        return "empty path"
    if len(p) > MAX_PATH_BYTES or len(p.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return f"longer than {MAX_PATH_BYTES} bytes"
    if "\0" in p:
        return "holds a NUL byte"
    if ".." in p.split("/"):
        return "has a '..' component"
    if absolute and not p.startswith("/"):
        return "must be absolute"
    if not absolute and p.startswith("/"):
        return "must be relative"
    return None


MAX_MODE = 0o777
"""Largest FileSpec.mode: permission bits only. Set-uid, set-gid and sticky (0o7000) are refused:
clawloop writes task files on the host, often as root (`tasks export`, the verifier's staging),
and a set-uid root file there is a root shell for any local user; no task format needs them (a
task that wants one sets it in its own setup, inside its sandbox)."""


def mode_problem(mode: object) -> str | None:
    """Why `mode` cannot be a task file's mode (None when it can): an int in 0o000..0o777."""
    if isinstance(mode, bool) or not isinstance(mode, int):
        return f"expected an integer, got {type(mode).__name__}"
    if not 0 <= mode <= MAX_MODE:
        return (f"{oct(mode) if mode >= 0 else mode} is not permission bits 0o000-0o777 "
                "(set-uid, set-gid and sticky bits are refused)")
    return None


def check_paths(paths: Iterable[str], *, absolute: bool = False) -> None:
    """ValueError naming the first bad path (a validator's message: `'<path>': why`; a long
    one shortened, so the message stays one readable line)."""
    for p in paths:
        if why := path_problem(p, absolute=absolute):
            shown = p if not isinstance(p, str) or len(p) <= 80 else p[:60] + "…" + p[-10:]
            raise ValueError(f"{shown!r}: {why}")


def check_modes(files: dict[str, FileSpec]) -> None:
    """ValueError naming the first file whose mode is refused: a spec built with model_copy (a
    Dockerfile's `COPY --chmod`) skipped FileSpec's own check, so the task checks its files again."""
    for p, spec in files.items():
        if why := mode_problem(spec.mode):
            raise ValueError(f"{p}.mode: {why}")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FileSpec(_Frozen):
    """One file: text or base64 content and a unix mode."""

    content: str
    """File content: UTF-8 text, or base64 when `encoding` is "base64"."""
    encoding: Literal["utf-8", "base64"] = "utf-8"
    """How `content` is stored; binary files (archives, images) use base64."""
    mode: int = 0o644
    """Unix permission bits, e.g. 0o755 for scripts (0o000..MAX_MODE)."""

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, v: object) -> int:
        if why := mode_problem(v):
            raise ValueError(why)
        return v  # type: ignore[return-value]

    @classmethod
    def of(cls, data: bytes | str, mode: int = 0o644) -> FileSpec:
        """Build a spec from text or bytes (bytes that are not UTF-8 become base64)."""
        if isinstance(data, str):
            return cls(content=data, mode=mode)
        try:
            return cls(content=data.decode("utf-8"), mode=mode)
        except UnicodeDecodeError:
            return cls(content=base64.b64encode(data).decode("ascii"), encoding="base64", mode=mode)

    def data(self) -> bytes:
        """The file's bytes."""
        if self.encoding == "base64":
            return base64.b64decode(self.content)
        return self.content.encode("utf-8")


class Verifier(_Frozen):
    """The hidden test: files copied to /tests only after the agent ends."""

    files: dict[str, FileSpec]
    """Paths relative to /tests → content; must contain the entry script."""
    entry: str = "test.sh"
    """Script run (with bash) to verify; it writes /logs/verifier/reward.txt or reward.json."""

    @field_validator("files")
    @classmethod
    def _relative(cls, v: dict[str, FileSpec]) -> dict[str, FileSpec]:
        check_paths(v)
        check_modes(v)
        return v

    @field_validator("entry")
    @classmethod
    def _entry(cls, v: str) -> str:
        check_paths([v])
        return v


class Solution(_Frozen):
    """The reference solution: commands run one per tool call, plus optional helper files."""

    steps: list[str]
    """Shell commands, each one bash tool call, run in the task's workdir."""
    files: dict[str, FileSpec] = Field(default_factory=dict)
    """Helper files (paths relative to /solution), copied in only for the oracle."""

    @field_validator("files")
    @classmethod
    def _relative(cls, v: dict[str, FileSpec]) -> dict[str, FileSpec]:
        check_paths(v)
        check_modes(v)
        return v


MAX_TIMEOUT_S = 86400.0
"""Longest time limit a task may set (a day): task files set them (`timeout_sec = inf` in
task.toml, `1e308` in a pool line), and eval or validate would wait that long. Public tasks ask
for minutes to a few hours; the cap also keeps every limit finite (inf and nan are refused)."""
MAX_TURNS = 1000
"""Most turns a task may give the agent: the model agent's episode is bounded by turns, not
by wall-clock time (benchmarks/ and params.yaml use 6 to 30)."""


class Limits(_Frozen):
    """Time and turn limits of one episode, each bounded (MAX_TURNS, MAX_TIMEOUT_S)."""

    max_turns: int = Field(16, gt=0, le=MAX_TURNS)
    """Most assistant turns before the episode ends with max_turns."""
    command_timeout_s: float = Field(30.0, gt=0, le=MAX_TIMEOUT_S)
    """Timeout of one command run by the agent."""
    agent_timeout_s: float = Field(600.0, gt=0, le=MAX_TIMEOUT_S)
    """Wall-clock budget of the agent's actions: a scripted agent's whole run (the oracle), the
    model agent's own commands (its generation is bounded by turns and tokens instead, so the
    budget does not depend on the batch an episode is generated in)."""
    verifier_timeout_s: float = Field(120.0, gt=0, le=MAX_TIMEOUT_S)
    """Timeout of the verifier script."""


class Provenance(_Frozen):
    """Where a task came from; not part of its identity."""

    routine: str = "manual"
    """procedural | hindsight | proposer | harbor | manual | ..."""
    generator: str | None = None
    """Generator name and version, e.g. "text_search@1"."""
    parent_id: str | None = None
    iteration: int | None = None
    seed: int | None = None


class Task(_Frozen):
    """A shell task: starting state, instruction, hidden verifier and reference solution."""

    instruction: str = Field(min_length=1)
    """What the agent is asked to do, as a person would phrase it."""
    files: dict[str, FileSpec] = Field(default_factory=dict)
    """Initial files: absolute path inside the sandbox → content."""
    setup: list[str] = Field(default_factory=list)
    """Shell commands run at setup, after the files are placed (Dockerfile-lite RUN lines)."""
    workdir: str = "/workspace"
    """Where the agent's commands start."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for setup, agent and verifier."""
    verifier: Verifier
    solution: Solution | None = None
    skill: str = "general"
    """Primary skill family, e.g. "text_search"."""
    level: int = Field(1, ge=1, le=10)
    """Difficulty level (1-5 for procedural generators)."""
    tags: tuple[str, ...] = ()
    source: str = "manual"
    """Suite or routine that produced the task."""
    needs_image: str | None = None
    """Why the task cannot run without its Docker image (None when it runs on any backend)."""
    limits: Limits = Field(default_factory=Limits)
    provenance: Provenance = Field(default_factory=Provenance)
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free data kept losslessly (e.g. unknown task.toml fields, original names)."""

    @field_validator("files")
    @classmethod
    def _absolute(cls, v: dict[str, FileSpec]) -> dict[str, FileSpec]:
        check_paths(v, absolute=True)
        check_modes(v)
        return v

    @field_validator("metadata")
    @classmethod
    def _metadata_depth(cls, v: dict[str, Any]) -> dict[str, Any]:
        stack: list[tuple[Any, int]] = [(v, 1)]  # a loop, not recursion: the input may be deep
        while stack:
            x, depth = stack.pop()
            if depth > MAX_NESTING:
                raise ValueError(f"nested deeper than {MAX_NESTING} levels")
            if isinstance(x, dict | list):
                stack += [(y, depth + 1) for y in (x.values() if isinstance(x, dict) else x)]
        return v

    @field_validator("metadata")
    @classmethod
    def _metadata_paths(cls, v: dict[str, Any]) -> dict[str, Any]:
        # The Harbor record's environment files and dirs are written back by export (and read
        # by apply_skills), relative to environment/; copy_sources map a task file to one of them.
        h = v.get("harbor")
        if not isinstance(h, dict):
            return v
        for key, absolute, kind in (("environment_files", False, dict), ("environment_dirs", False, list),
                                    ("copy_sources", True, dict)):
            items = h.get(key)
            if items is None:
                continue
            if not isinstance(items, kind):  # readers take .items() of the objects: a list would crash them
                raise ValueError(f"harbor.{key}: expected {'an object' if kind is dict else 'a list'}")
            try:
                check_paths(items, absolute=absolute)
                if key == "copy_sources":
                    check_paths(items.values())
            except ValueError as e:
                raise ValueError(f"harbor.{key}.{e}") from None
        return v

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> str:
        """sha256 of the canonical JSON of the content fields (first 16 hex digits)."""
        return content_hash(self.model_dump(mode="json", exclude=_NON_CONTENT))

    @property
    def name(self) -> str:
        """A readable name: the one its importer kept (a Harbor directory, InterCode's `fsN-II`),
        else the id. Episodes carry it, so flip tables and the viewer name tasks as their suite does."""
        for key in ("harbor", "intercode"):
            meta = self.metadata.get(key)
            if isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]:
                return meta["name"]
        return self.id

    def to_json(self) -> dict[str, Any]:
        """The task as a JSON-ready dict, id included."""
        return self.model_dump(mode="json")

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Task:
        """Parse a dict; a stored `id` is checked against the content."""
        obj = dict(obj)
        stored = obj.pop("id", None)
        task = cls.model_validate(obj)
        if stored is not None and stored != task.id:
            raise ValueError(f"id {stored!r} does not match the task's content ({task.id})")
        return task


def content_hash(obj: Any) -> str:
    """sha256 (16 hex digits) of canonical JSON: sorted keys, no whitespace."""
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
