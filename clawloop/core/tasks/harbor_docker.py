"""Harbor tasks on the docker backend: their own image when its base is here, else the generic one.

A task whose Dockerfile import recorded, and whose base images (every FROM) the daemon has, runs
in its own image: `docker build` of the task's environment (sandbox.docker_build: tagged by
content, cached, flattened), with its files, setup and WORKDIR in place; the verifier script is
judged against that image. Any other task runs in the generic image
(clawloop-sandbox:latest) with the Dockerfile's files and setup replayed as on bwrap, and is
re-classified here against a Runtime of that image (same python runtime, the image's binaries
and dpkg database) rather than the host's (bwrap's /usr is the host's, so `apt-get install gcc`
counts as satisfied there where the host has gcc): a task that needs more than the image has is
skipped with a reason naming what is missing and its base image.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from clawloop.core.tasks.dockerfile_lite import _logical_lines, parse_dockerfile
from clawloop.core.tasks.harbor import HARBOR_KEY, _compose_needs
from clawloop.core.tasks.shell_lite import Runtime, check_script, default_runtime_dir, detect_runtime
from clawloop.core.tasks.task import FileSpec, Task
from clawloop.errors import ClawloopError
from sandbox.docker import client, image_name
from sandbox.docker_build import BuildError, base_image_id, build_task_image, context_tag

# One command lists what the image offers: bin dirs, a separator, then installed apt packages.
_PROBE = ("ls /usr/bin /usr/sbin /bin /sbin 2>/dev/null; echo @@dpkg@@; "
          "dpkg-query -W -f '${db:Status-Abbrev} ${Package}\\n' 2>/dev/null; true")


@functools.lru_cache(maxsize=4)
def image_runtime(image: str) -> Runtime:
    """The Runtime of `image` (cached per process): the host's task runtime packages (the
    backend mounts or embeds that runtime) with the image's binaries and apt packages."""
    out = client(timeout=60).containers.run(image, ["/bin/sh", "-c", _PROBE], remove=True,
                                            network_mode="none").decode(errors="replace")
    bins_part, _, dpkg_part = out.partition("@@dpkg@@")
    bins = {w for w in bins_part.split() if not w.endswith(":")}
    if "python3" in bins:
        bins.add("python")
    host = detect_runtime()
    rt = default_runtime_dir()
    own = set(os.listdir(rt / "bin")) if rt is not None and (rt / "bin").is_dir() else set()
    apt = {w[1] for w in map(str.split, dpkg_part.splitlines()) if len(w) == 2 and w[0] == "ii"}
    # The runtime's curl/wget stand-ins (the verifier template's uv installer) go with it, and
    # its apt-get accepts them as the host does.
    apt |= {p for p in host.apt_packages if p in own}
    return Runtime(host.python_packages, frozenset(bins | own), frozenset(apt))


def _harbor(task: Task) -> dict[str, Any]:
    h = task.metadata.get(HARBOR_KEY) if isinstance(task.metadata, dict) else None
    return h if isinstance(h, dict) else {}


def build_context(task: Task) -> dict[str, FileSpec] | None:
    """The task's environment/ as import read it (Dockerfile, the files it COPYs, the rest of
    the dir), None when import recorded no Dockerfile (generated ones included)."""
    h = _harbor(task)
    if not isinstance(h.get("dockerfile"), str):
        return None
    context = {"Dockerfile": FileSpec.of(h["dockerfile"])}
    for k, v in (h.get("environment_files") or {}).items():
        context[k] = FileSpec.model_validate(v)
    for dest, src in (h.get("copy_sources") or {}).items():
        if dest in task.files:
            context.setdefault(src, task.files[dest])
    return context


def base_images(dockerfile: str) -> list[str]:
    """The images the Dockerfile's FROMs name (earlier stages excepted; ARGs before the first
    FROM substituted)."""
    args: dict[str, str] = {}
    stages: set[str] = set()
    out: list[str] = []
    for _, kw, rest in _logical_lines(dockerfile):
        if kw == "ARG" and not out:
            k, _, v = rest.partition("=")
            args[k.strip()] = v.strip().strip('"\'')
        elif kw == "FROM":
            words = [w for w in rest.split() if not w.startswith("--")]
            if not words:
                continue
            image = words[0]
            for k, v in args.items():
                image = image.replace(f"${{{k}}}", v).replace(f"${k}", v)
            if image.lower() not in stages and image not in out and image != "scratch":
                out.append(image)
            if len(words) >= 3 and words[1].lower() == "as":
                stages.add(words[2].lower())
    return out


def buildable(task: Task) -> tuple[dict[str, FileSpec], list[str]] | None:
    """(build context, base images) when the docker backend builds the task's own image: import
    recorded its Dockerfile, the daemon has every base image, one container suffices."""
    context = build_context(task)
    if context is None:
        return None
    if ("docker-compose.yaml" in context or "docker-compose.yml" in context) and _compose_needs(context):
        return None  # several containers
    bases = base_images(context["Dockerfile"].data().decode(errors="replace"))
    if not bases or any(base_image_id(b) is None for b in bases):
        return None
    return context, bases


_failed: dict[str, str] = {}  # content tag → why its build failed (one build per process)


def task_image(task: Task) -> str | None:
    """The tag of the task's own image, built unless cached (see the module docstring); None
    when the task runs in the generic image. ClawloopError (one line) when the build fails."""
    found = buildable(task)
    if found is None:
        return None
    context, bases = found
    files = {k: (v.data(), v.mode) for k, v in context.items()}
    dirs = _harbor(task).get("environment_dirs") or []
    key = context_tag(files, dirs, ",".join(bases))
    if key in _failed:
        raise ClawloopError(_failed[key])
    try:
        return build_task_image(files, dirs, bases=bases, timeout=build_timeout(task))
    except BuildError as e:
        _failed[key] = f"task {task.id}: environment/Dockerfile: {e}"
        raise ClawloopError(_failed[key]) from None


def build_timeout(task: Task) -> float:
    """task.toml's [environment] build_timeout_sec (Harbor's default: 600 s)."""
    env = (_harbor(task).get("task_toml") or {}).get("environment") or {}
    t = env.get("build_timeout_sec") if isinstance(env, dict) else None
    return float(t) if isinstance(t, int | float) and not isinstance(t, bool) and t > 0 else 600.0


def needs_on_image(task: Task, runtime: Runtime) -> str | None:
    """What `task` needs beyond `runtime` (its Dockerfile and verifier script), as import says
    it for the host; task.needs_image for a task without a recorded Dockerfile."""
    h = _harbor(task)
    context = build_context(task)
    if context is None:
        return task.needs_image
    try:
        lr = parse_dockerfile(h["dockerfile"], context, runtime, where="environment/Dockerfile",
                              context_dirs=frozenset(h.get("environment_dirs") or ()), name=h.get("name"))
    except ClawloopError as e:  # the task loaded, so this is a context the record lost
        return f"environment/Dockerfile: {e}"
    if lr.needs_image:
        return lr.needs_image
    entry = task.verifier.entry
    script = task.verifier.files.get(entry) or task.verifier.files.get("test.sh")
    why = check_script(script.data().decode(errors="replace"), runtime) if script else None
    return f"tests/{entry}: {why}" if why else None


def docker_skip_reason(task: Task) -> str | None:
    """Why the docker backend cannot run `task` faithfully, or None (see the module docstring)."""
    try:
        own = task_image(task)
    except ClawloopError:  # the episode reports the build's failure (outcome "error")
        return None
    except Exception:  # no daemon: the sandbox will say so itself
        own = None
    if own is not None:  # its Dockerfile is done: only the verifier script is left to judge
        script = task.verifier.files.get(task.verifier.entry) or task.verifier.files.get("test.sh")
        why = check_script(script.data().decode(errors="replace"), image_runtime(own)) if script else None
        return f"tests/{task.verifier.entry}: {why} (not in the task's image)" if why else None
    image = image_name()
    try:
        needs = needs_on_image(task, image_runtime(image))
    except Exception as e:  # no daemon or image: the sandbox will say so itself
        if not task.needs_image:
            return None
        needs = f"{task.needs_image} (image {image} could not be probed: {str(e)[:120]})"
    if not needs:
        return None
    h = task.metadata.get(HARBOR_KEY) if isinstance(task.metadata, dict) else None
    base = h.get("from") if isinstance(h, dict) else None
    if not base:
        return f"needs its Docker image: {needs} (not in {image}; import recorded no Dockerfile to build)"
    missing = [b for b in base_images(h["dockerfile"]) if not _present(client, b)] \
        if isinstance(h.get("dockerfile"), str) else [] if _present(client, base) else [base]
    if missing:
        return (f"needs its Docker image: {needs} (not in {image}); "
                f"base image {', '.join(missing)} is not available to docker here")
    return f"needs its Docker image: {needs} (not in {image})"


def _present(client: Any, image: str) -> bool:
    try:
        client(timeout=10).images.get(image)
        return True
    except Exception:  # no such image (no registry here)
        return False
