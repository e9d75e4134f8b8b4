"""Harbor import/export and Dockerfile-lite: mapping, lossless round trips, clear errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clawloop.core.tasks.dockerfile_lite import DEFAULT_WORKDIR, parse_dockerfile
from clawloop.core.tasks.harbor import find_task_dirs, load_harbor_task
from clawloop.core.tasks.harbor_export import export_harbor_task, export_tasks, task_name
from clawloop.core.tasks.shell_lite import Runtime, check_script
from clawloop.core.tasks.shell_words import shell_segments
from clawloop.core.tasks.task import FileSpec, Limits, Provenance, Solution, Task, Verifier
from clawloop.errors import ClawloopError

FIXTURES = Path(__file__).parent / "fixtures" / "harbor"
SHELL_CORE = Path(__file__).parent.parent / "benchmarks" / "shell-core"
RT = Runtime(frozenset({"pytest", "pandas", "numpy", "pyyaml", "pip", "pytest-json-ctrf"}),
             frozenset({"python3", "python", "bash", "jq", "git", "curl", "gcc", "make"}),
             frozenset({"jq", "git", "curl", "build-essential", "ca-certificates"}))


def test_fixture_mapping() -> None:
    t = load_harbor_task(FIXTURES / "region-totals")
    assert (t.skill, t.level, t.tags) == ("data-processing", 3, ("csv", "pandas"))
    assert t.limits.verifier_timeout_s == 120 and t.limits.agent_timeout_s == 600
    assert t.workdir == "/home/user" and set(t.files) == {"/home/user/data/sales.csv"}
    assert t.setup == [] and t.needs_image is None  # python3-pip, pytest, pandas: in the runtime
    assert t.solution is not None and t.solution.steps == ["bash /solution/solve.sh"]
    assert set(t.verifier.files) == {"test.sh", "test_outputs.py"} and t.verifier.files["test.sh"].mode == 0o755
    h = t.metadata["harbor"]
    assert h["from"] == "ubuntu:24.04" and h["name"] == "region-totals"
    assert h["task_toml"]["metadata"]["author_name"] == "clawloop fixtures"
    assert t.source == "harbor" and t.provenance.routine == "harbor"

    w = load_harbor_task(FIXTURES / "word-count")
    assert (w.skill, w.level, w.source) == ("text_search", 2, "fixtures")
    assert w.env == {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"} and w.workdir == "/app"
    assert "/app/docs/sub dir/b.txt" in w.files
    assert w.setup == ['mkdir -p /app/out && echo "not a text file" > /app/docs/skip.md']
    assert w.metadata["harbor"]["task_toml"]["verifier"]["env"] == {"EXPECTED_FILES": "3"}
    assert w.metadata["harbor"]["task_toml"]["metadata"]["reviewed"] is True
    assert set(w.solution.files) == {"solve.sh", "count.sh"}  # type: ignore[union-attr]

    c = load_harbor_task(FIXTURES / "convert-slides")
    assert c.needs_image is None and c.level == 5  # runs with an apt layer (tests/test_layers.py)
    assert c.metadata["sandbox"]["layers"] == [{"kind": "apt", "packages": ["libreoffice-impress"]}]


def _roundtrip(t: Task, tmp: Path) -> Task:
    out = export_harbor_task(t, tmp / task_name(t))
    back = load_harbor_task(out, source=t.source)
    assert back.to_json() == t.to_json()
    return back


@pytest.mark.parametrize("name", ["region-totals", "word-count", "convert-slides"])
def test_fixture_roundtrip_is_lossless_and_verbatim(name: str, tmp_path: Path) -> None:
    t = load_harbor_task(FIXTURES / name)
    _roundtrip(t, tmp_path)
    src = (FIXTURES / name / "environment" / "Dockerfile").read_text()
    assert (tmp_path / name / "environment" / "Dockerfile").read_text() == src


@pytest.mark.skipif(not SHELL_CORE.is_dir(), reason="benchmarks/shell-core not present")
def test_shell_core_roundtrip(tmp_path: Path) -> None:
    tasks = [load_harbor_task(d) for d in find_task_dirs(SHELL_CORE)]
    assert len(tasks) >= 30
    for p, t in zip(export_tasks(tasks, tmp_path), tasks, strict=True):
        assert load_harbor_task(p, source=t.source) == t


def test_synthetic_task_roundtrip(tmp_path: Path) -> None:
    t = Task(
        instruction="Rename every file in `/workspace/in box` to lower case.\n",
        files={"/workspace/in box/A File.TXT": FileSpec.of("x\n"),
               "/workspace/bin.dat": FileSpec.of(bytes(range(256))),
               "/workspace/secret": FileSpec.of("k", 0o600),
               "/srv/$weird*[name].txt": FileSpec.of("w")},
        setup=["git init -q repo", "cat > notes <<'EOF'\nline $HOME\nEOF", "echo a \\\n  b > c"],
        env={"GREETING": 'say "hi" $USER \\o/', "EMPTY": ""},
        verifier=Verifier(files={"check.sh": FileSpec.of("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")},
                          entry="check.sh"),
        solution=Solution(steps=["cd 'in box' && for f in *; do mv \"$f\" \"${f,,}\"; done", "ls"],
                          files={"helper.py": FileSpec.of("print(1)\n")}),
        skill="files", level=4, tags=("rename",), source="procedural",
        limits=Limits(max_turns=7, command_timeout_s=5, agent_timeout_s=99, verifier_timeout_s=11),
        provenance=Provenance(routine="procedural", generator="rename@1", seed=3, iteration=2),
        metadata={"knobs": {"distractors": 2, "none": None}, "harbor_like": [1, "a"]},
    )
    back = _roundtrip(t, tmp_path)
    assert back.id == t.id
    need = t.model_copy(update={"needs_image": "needs gpu"})
    _roundtrip(need, tmp_path / "n")


def test_modified_harbor_task_regenerates_its_dockerfile(tmp_path: Path) -> None:
    t = load_harbor_task(FIXTURES / "word-count")
    t2 = t.model_copy(update={"files": {**t.files, "/app/docs/new.txt": FileSpec.of("new words\n")}})
    out = export_harbor_task(t2, tmp_path / "x")
    assert (out / "environment" / "Dockerfile").read_text().startswith("# clawloop: generated")
    back = load_harbor_task(out)
    assert (back.files, back.setup, back.env, back.workdir) == (t2.files, t2.setup, t2.env, t2.workdir)


# ------------------------------------------------------------------------------ Dockerfile-lite
def _lite(text: str, ctx: dict[str, str] | None = None, dirs: frozenset[str] = frozenset()):  # noqa: ANN202
    return parse_dockerfile(text, {k: FileSpec.of(v) for k, v in (ctx or {}).items()}, RT, "Dockerfile", dirs)


def test_lite_copy_run_order_env_workdir() -> None:
    lr = _lite(
        "# syntax=docker/dockerfile:1\nFROM python:3.12-slim AS base\nARG NAME=data\n"
        "ENV A=1 B=\"two words\" \\\n    PATH=/opt/x:$PATH\nENV LEGACY value with spaces\n"
        "WORKDIR /srv\nWORKDIR app\nCOPY ${NAME}/ ./in/\nCOPY --chmod=600 key /root/.key\n"
        "RUN apt-get update && apt-get install -y jq && mkdir -p out\n"
        "COPY late.txt /srv/app/late.txt\nCOPY <<EOF /srv/app/h.txt\nhello\nEOF\nRUN <<EOF\necho hi\nEOF\n"
        "EXPOSE 80\nCMD [\"bash\"]\n",
        {"data/x.csv": "1\n", "data/sub/y": "2", "key": "k", "late.txt": "late"}, frozenset({"data/empty"}))
    assert lr.base_image == "python:3.12-slim" and lr.workdir == "/srv/app"
    assert lr.env == {"A": "1", "B": "two words", "LEGACY": "value with spaces"}
    assert set(lr.files) == {"/srv/app/in/x.csv", "/srv/app/in/sub/y", "/root/.key"}
    assert lr.files["/root/.key"].mode == 0o600
    assert lr.setup[0] == "mkdir -p /srv/app/in/empty" and lr.setup[1] == "mkdir -p out"
    assert "base64 -d > /srv/app/late.txt" in lr.setup[2] and "h.txt" in lr.setup[3]
    assert lr.setup[4] == "echo hi" and lr.needs_image is None
    assert any("apt-get install" in s for s in lr.skipped) and "CMD" in lr.ignored


@pytest.mark.parametrize("line, why", [
    ("RUN apt-get install -y ffmpeg", "ffmpeg"),
    ("RUN pip install torch==2.0", "torch"),
    ("RUN curl -fsSL https://x.sh | sh", "network"),
    ("RUN git clone https://github.com/a/b", "network"),
    ("COPY --from=builder /a /b", "multi-stage"),
    ("FROM alpine", "multi-stage"),
    ("ADD https://example.com/f.tgz /f", "URL"),
])
def test_lite_needs_image(line: str, why: str) -> None:
    assert why in (_lite(f"FROM ubuntu\n{line}\n").needs_image or "")


def test_lite_pip_requirements_and_satisfied_lines() -> None:
    lr = _lite("FROM ubuntu\nCOPY req.txt .\nRUN python3 -m pip install -r req.txt && useradd -m bob\n",
               {"req.txt": "pandas>=2\n# comment\nPyYAML\n"})
    assert lr.needs_image is None and lr.setup == []
    assert "torch" in (_lite("FROM u\nCOPY r .\nRUN pip install -r r\n", {"r": "torch\n"}).needs_image or "")


@pytest.mark.parametrize("text, where", [
    ("FROM u\nFROBNICATE x\n", "Dockerfile:2: unknown instruction"),
    ("FROM u\nCOPY missing.txt /a\n", "Dockerfile:2: COPY source 'missing.txt'"),
    ("FROM u\nENV A=\"unclosed\n", "Dockerfile:2: ENV"),
])
def test_lite_errors_name_the_line(text: str, where: str) -> None:
    with pytest.raises(ClawloopError, match=where):
        _lite(text)


def test_shell_segments_and_script_check() -> None:
    segs = shell_segments("a && b 'c && d' || e; f $(g && h)\ncat <<EOF > x\ni && j\nEOF\n# k && l\nm")
    assert [s.text for s in segs] == ["a", "b 'c && d'", "e", "f $(g && h)", "cat <<EOF > x\ni && j\nEOF", "m"]
    assert check_script("pytest /tests/test_outputs.py\necho 1 > /logs/verifier/reward.txt\n", RT) is None
    assert "needs the network" in (check_script("curl -o x https://example.com/x\n", RT) or "")


TEMPLATE = """#!/bin/bash
apt-get update
apt-get install -y \\
    curl \\
    git
curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh
source $HOME/.local/bin/env
uvx \\
  --with pytest==8.4.1 \\
  --with pytest-json-ctrf==0.3.5 \\
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA
"""


def test_verifier_template_runs_offline_and_continuations_parse() -> None:
    """Harbor's verifier template: apt-get of host packages, the uv installer and uvx of runtime
    packages are all stand-ins' work (sandbox/offline_tools.py); a continued line is one command."""
    assert check_script(TEMPLATE, RT) is None
    missing = TEMPLATE.replace("    git", "    r-base").replace("pytest-json-ctrf==0.3.5", "pytest-json-ctrf")
    assert check_script(missing, RT) == "apt package 'r-base' is not installed on this host"
    no_pkg = TEMPLATE.replace("pytest-json-ctrf==0.3.5", "scikit-learn==1.6.1")
    assert "python package 'scikit-learn' is not in the task runtime" in (check_script(no_pkg, RT) or "")


def test_lite_pip_requirements_through_a_copy_destination() -> None:
    ctx = {"reqs/test.txt": "pytest==8.4.1\npandas\n", "other.txt": "torch\n"}
    lr = _lite("FROM python:3.12\nCOPY reqs/test.txt /tmp/r.txt\nRUN pip install -r /tmp/r.txt\n", ctx)
    assert lr.needs_image is None and lr.setup == []
    lr = _lite("FROM python:3.12\nWORKDIR /app\nCOPY other.txt deps.txt\nRUN pip install \\\n  -r deps.txt\n", ctx)
    assert "python package 'torch'" in (lr.needs_image or "")
    lr = _lite("FROM u\nRUN apt-get update && apt-get install -y \\\n  # a comment\n  jq \\\n  git"
               " && ln -s /usr/bin/python3 /usr/bin/python\n")
    assert lr.needs_image is None and lr.setup == []


def test_test_sh_and_solve_sh_stored_without_x_become_executable(tmp_path: Path) -> None:
    d = _copy_fixture(tmp_path)
    (d / "tests" / "test.sh").chmod(0o644)
    (d / "solution").mkdir(exist_ok=True)
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    (d / "solution" / "solve.sh").chmod(0o644)
    t = load_harbor_task(d)
    assert t.verifier.files["test.sh"].mode == 0o755 and t.solution.files["solve.sh"].mode == 0o755


# ------------------------------------------------------------------------------ bad input
def _copy_fixture(tmp: Path, name: str = "word-count") -> Path:
    dst = tmp / name
    shutil.copytree(FIXTURES / name, dst)
    return dst


def test_bad_task_toml(tmp_path: Path) -> None:
    d = _copy_fixture(tmp_path)
    (d / "task.toml").write_text("version = 1.0\n[metadata\n")
    with pytest.raises(ClawloopError, match=r"word-count/task\.toml: not valid TOML"):
        load_harbor_task(d)
    (d / "task.toml").write_text('[metadata]\nlevel = "high"\n')
    with pytest.raises(ClawloopError, match=r"task\.toml: metadata\.level: expected int"):
        load_harbor_task(d)
    (d / "task.toml").write_text("[metadata]\nlevel = 42\n")
    with pytest.raises(ClawloopError, match=r"word-count: level: "):
        load_harbor_task(d)


def test_missing_instruction(tmp_path: Path) -> None:
    d = _copy_fixture(tmp_path)
    (d / "instruction.md").unlink()
    with pytest.raises(ClawloopError, match=r"word-count/instruction\.md: file not found"):
        load_harbor_task(d)


def test_terminal_bench_1_import(tmp_path: Path) -> None:
    d = tmp_path / "tb1-task"
    (d / "tests").mkdir(parents=True)
    (d / "task.yaml").write_text("instruction: |\n  Create hello.txt in /app.\ndifficulty: hard\n"
                                 "category: files\ntags: [basic]\nmax_test_timeout_sec: 33\nparser_name: pytest\n")
    (d / "Dockerfile").write_text("FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest\nWORKDIR /app\n")
    (d / "run-tests.sh").write_text("#!/bin/bash\ntest -f /app/hello.txt\n")
    (d / "solution.sh").write_text("#!/bin/bash\ntouch /app/hello.txt\n")
    (d / "tests" / "test_outputs.py").write_text("def test(): pass\n")
    t = load_harbor_task(d)
    assert (t.skill, t.level, t.tags, t.workdir) == ("files", 5, ("basic",), "/app")
    assert t.limits.verifier_timeout_s == 33 and t.instruction.startswith("Create hello.txt")
    assert {"test.sh", "run-tests.sh", "test_outputs.py"} == set(t.verifier.files)
    assert t.metadata["harbor"]["format"] == "terminal-bench"
    assert t.metadata["harbor"]["task_yaml"] == {"parser_name": "pytest"}
    back = load_harbor_task(export_harbor_task(t, tmp_path / "out"), source=t.source)
    assert (back.id, back.skill, back.level) == (t.id, t.skill, t.level)


def test_offline_template_fixture_oracle_passes_noop_fails() -> None:
    """A hand-made task with public Harbor tasks' features runs on bwrap as Harbor would run it:
    0644 scripts, the uv verifier template, /app, /etc edits, a python symlink, pip -r."""
    import sandbox
    from clawloop.core.agent.oracle import run_episode
    from clawloop.core.tasks.shell_lite import default_runtime_dir

    if why := sandbox.unavailable_reason("bwrap"):
        pytest.skip(f"bwrap backend unavailable: {why}")
    rt = default_runtime_dir()
    if rt is None or not (rt / "bin" / "uvx").exists():
        pytest.skip(f"task runtime {rt} has no offline stand-ins: run scripts/setup.sh")
    task = load_harbor_task(FIXTURES.parent / "harbor-offline" / "offline-template")
    assert task.needs_image is None and task.workdir == "/app"
    oracle = run_episode(task, "oracle", "bwrap")
    assert oracle.outcome == "passed", (oracle.reason, oracle.verifier_output)
    noop = run_episode(task, "noop", "bwrap")
    assert noop.outcome == "failed", (noop.reason, noop.verifier_output)


# ------------------------------------------------------------------------------ several uids
@pytest.mark.parametrize(("name", "text", "where"), [
    ("test_outputs.py", "import subprocess\n\nsubprocess.run(['id'], user='nobody')\n", "tests/test_outputs.py:3"),
    ("test_outputs.py", "import os\nos.setuid(65534)\n", "tests/test_outputs.py:2: switches user ids (setuid)"),
    ("check.sh", "#!/bin/bash\nsu nobody -s /bin/sh -c 'cat /tests/x'\n", "tests/check.sh: runs a command"),
    ("check.sh", "#!/bin/bash\nsudo -n -u appuser ls /app\n", "tests/check.sh: runs a command"),
])
def test_a_verifier_that_switches_users_needs_several_uids(tmp_path: Path, name: str, text: str,
                                                           where: str) -> None:
    """A plain bwrap sandbox maps one uid (EINVAL on a switch, measured): the import records the
    place that switches; the runner gives such a task uids 0..65535 where it can (root) and
    skips it, naming why, where it cannot."""
    from clawloop.core.tasks.layers import layer_skip_reason, uids_unavailable

    d = _copy_fixture(tmp_path)
    (d / "tests" / name).write_text(text)
    t = load_harbor_task(d)
    assert t.needs_image is None and where in t.metadata["sandbox"]["uids"]
    assert "only the bwrap backend" in (layer_skip_reason(t, "local") or "")
    why = uids_unavailable()
    assert layer_skip_reason(t, "bwrap") == (None if why is None else
                                             f"runs a process as another user; the sandbox maps one uid: {why}")


@pytest.mark.parametrize("text", [
    "import subprocess\nsubprocess.run(['id'], user=None)\n",  # the default: no switch
    "def make(user):\n    return dict(user=user)\nmake(user='bob')\n",  # not a process spawn
    "import getpass\nprint(getpass.getuser())\n",
])
def test_python_that_does_not_switch_users_is_not_flagged(tmp_path: Path, text: str) -> None:
    d = _copy_fixture(tmp_path)
    (d / "tests" / "test_outputs.py").write_text(text)
    assert load_harbor_task(d).needs_image is None


# ------------------------------------------------------------------ Harbor fidelity (issue #51 E)
FIDELITY = Path(__file__).parent / "fixtures" / "harbor-fidelity"


@pytest.mark.parametrize(("text", "workdir", "copied"), [
    ("FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nCOPY a.txt .\n", "/app", "/app/a.txt"),
    ("FROM --platform=linux/amd64 ghcr.io/laude-institute/t-bench/ubuntu-24-04@sha256:ab AS b\nCOPY a.txt .\n",
     "/app", "/app/a.txt"),
    ("ARG BASE=ghcr.io/laude-institute/t-bench/python-3-13:latest\nFROM $BASE\nWORKDIR src\nCOPY a.txt .\n",
     "/app/src", "/app/src/a.txt"),
    ("FROM python:3.13-slim\nCOPY a.txt .\n", DEFAULT_WORKDIR, "/a.txt"),  # sets no WORKDIR: as before
])
def test_a_known_base_images_workdir_starts_the_build(text: str, workdir: str, copied: str) -> None:
    lr = _lite(text, {"a.txt": "x"})
    assert lr.workdir == workdir and set(lr.files) == {copied}


def _run_both(task):  # noqa: ANN001, ANN202
    import sandbox
    from clawloop.core.agent.oracle import run_episode

    if why := sandbox.unavailable_reason("bwrap"):
        pytest.skip(f"bwrap backend unavailable: {why}")
    return run_episode(task, "oracle", "bwrap"), run_episode(task, "noop", "bwrap")


def test_a_task_on_a_terminal_bench_base_works_in_its_workdir() -> None:
    """FROM a Terminal-Bench base, no WORKDIR line: the relative COPY, the solution and test.sh
    all assume /app, the base image's WORKDIR (before: /workspace, and the oracle failed)."""
    task = load_harbor_task(FIDELITY / "tbench-base-workdir")
    assert task.workdir == "/app" and "/app/inventory.csv" in task.files and task.needs_image is None
    oracle, noop = _run_both(task)
    assert oracle.outcome == "passed", (oracle.reason, oracle.verifier_output)
    assert noop.outcome == "failed", (noop.reason, noop.verifier_output)


def test_a_task_whose_dockerfile_adds_a_user_runs_as_that_user() -> None:
    """`RUN useradd -m appuser && chown -R appuser /srv/data`, replayed in the task world (once
    dropped): the solution's runuser and the verifier's `su appuser -c` run as that user, who owns
    the data dir and a home."""
    from clawloop.core.tasks.layers import uids_unavailable

    task = load_harbor_task(FIDELITY / "useradd-chown")
    assert task.needs_image is None and "useradd -m appuser && chown -R appuser /srv/data" in task.setup[-1]
    if why := uids_unavailable():
        pytest.skip(f"several uids: {why}")
    oracle, noop = _run_both(task)
    assert oracle.outcome == "passed", (oracle.reason, oracle.verifier_output)
    assert noop.outcome == "failed", (noop.reason, noop.verifier_output)
