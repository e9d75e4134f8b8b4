"""Which Harbor tasks the docker backend can run, judged against its image, not the host.

Import classifies a task's Dockerfile and test script against the host (bwrap's /usr is the
host's): `apt-get install gcc` counts as satisfied where the host has gcc. The docker backend
runs every task in one image (clawloop-sandbox:latest, the Dockerfile's files and setup
replayed as on bwrap) whose packages are its own, so the same task is re-classified here
against a Runtime of that image: same python runtime, the image's binaries and dpkg database.
The backend does not build a task's own Dockerfile; a task that needs more than the image has
is skipped with a reason naming what is missing and its base image.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from clawloop.errors import ClawloopError
from clawloop.tasks.dockerfile_lite import parse_dockerfile
from clawloop.tasks.harbor import HARBOR_KEY
from clawloop.tasks.shell_lite import Runtime, check_script, default_runtime_dir, detect_runtime
from clawloop.tasks.task import FileSpec, Task

# One command lists what the image offers: bin dirs, a separator, then installed apt packages.
_PROBE = ("ls /usr/bin /usr/sbin /bin /sbin 2>/dev/null; echo @@dpkg@@; "
          "dpkg-query -W -f '${db:Status-Abbrev} ${Package}\\n' 2>/dev/null; true")


@functools.lru_cache(maxsize=4)
def image_runtime(image: str) -> Runtime:
    """The Runtime of `image` (cached per process): the host's task runtime packages (the
    backend mounts or embeds that runtime) with the image's binaries and apt packages."""
    from sandbox.docker import client

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


def needs_on_image(task: Task, runtime: Runtime) -> str | None:
    """What `task` needs beyond `runtime` (its Dockerfile and verifier script), as import says
    it for the host; task.needs_image for a task without a recorded Dockerfile."""
    h: dict[str, Any] = task.metadata.get(HARBOR_KEY) or {} if isinstance(task.metadata, dict) else {}
    if not isinstance(h.get("dockerfile"), str):
        return task.needs_image
    context = {"Dockerfile": FileSpec.of(h["dockerfile"])}
    for k, v in (h.get("environment_files") or {}).items():
        context[k] = FileSpec.model_validate(v)
    for dest, src in (h.get("copy_sources") or {}).items():
        if dest in task.files:
            context.setdefault(src, task.files[dest])
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
    from sandbox.docker import client, image_name

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
        return f"needs its Docker image: {needs} (not in {image}; the docker backend does not build task images)"
    try:
        client(timeout=10).images.get(base)
        have = f"base image {base} is present, but the docker backend does not build task images"
    except Exception:  # no such image (no registry here): not available
        have = f"base image {base} is not available to docker here"
    return f"needs its Docker image: {needs} (not in {image}); {have}"
