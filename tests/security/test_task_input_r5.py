"""Task input from strangers, round 5 (issue #75, C3 and C4): a small file never becomes a bomb
or a hang (archive members, `$VAR` expansion, YAML aliases, deep TOML, infinite timeouts), and
odd shapes are one line naming the file and the field, never a traceback.

Each test builds the attack on a legitimate fixture, so what changes is only the hostile part.
"""

from __future__ import annotations

import io
import json
import shutil
import signal
import subprocess
import tarfile
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clawloop.cli import app
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.pool import read_pool
from clawloop.core.tasks.suite import load_suite
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[2]
WORD_COUNT = ROOT / "tests" / "fixtures" / "harbor" / "word-count"


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """TimeoutError after `seconds` (a hang fails the test instead of stalling the run)."""
    def expired(*_: object) -> None:
        raise TimeoutError(f"still running after {seconds}s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _word_count(tmp_path: Path) -> Path:
    d = tmp_path / "word-count"
    shutil.copytree(WORD_COUNT, d)
    return d


def _toml_append(d: Path, text: str) -> None:
    with (d / "task.toml").open("a") as f:
        f.write("\n" + text + "\n")


def _tb1(tmp_path: Path, task_yaml: str = "instruction: Create hello.txt in /app.\n",
         solution_yaml: str | None = None) -> Path:
    """A Terminal-Bench 1 task directory (task.yaml, Dockerfile, run-tests.sh)."""
    d = tmp_path / "tb1-task"
    (d / "tests").mkdir(parents=True)
    (d / "task.yaml").write_text(task_yaml)
    (d / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    (d / "run-tests.sh").write_text("#!/bin/bash\ntest -f /app/hello.txt\n")
    if solution_yaml is not None:
        (d / "solution.yaml").write_text(solution_yaml)
    return d


def _pool(tmp_path: Path, mutate: Callable[[dict[str, Any]], None]) -> Path:
    line = load_harbor_task(WORD_COUNT).to_json()
    line.pop("id")
    mutate(line)
    p = tmp_path / "pool.jsonl"
    p.write_text(json.dumps(line) + "\n")  # orjson writes 254 levels at most
    return p


def _refused(args: list[str], *, names: str) -> str:
    """Run the CLI: it must end in one ClawloopError (printed by clawloop.cli.main as one line,
    exit 2), not in another exception (a traceback); it or a line printed before it (a suite's
    per-task errors) names `names`."""
    r = CliRunner().invoke(app, args)
    assert isinstance(r.exception, ClawloopError), (r.exception, r.output)
    msg = str(r.exception)
    assert "\n" not in msg and len(msg) < 400, msg
    assert names in msg or any(names in ln and len(ln) < 400 for ln in r.output.splitlines()), (msg, r.output)
    return msg


# --------------------------------------------------------------- C3: bombs from small files
def _tar_gz(members: dict[str, int]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, size in members.items():
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BytesIO(bytes(size)))
    return buf.getvalue()


@pytest.mark.parametrize(("members", "why", "peak_mib"), [
    ({"big.bin": 40 << 20}, r"ADD x.tar.gz: big.bin: \d+ bytes, more than a task file may have", 24),
    # each member under the per-file cap, together over the task's: the first four are read
    ({f"part{i}.bin": 15 << 20 for i in range(5)}, r"ADD x.tar.gz: (part4.bin: the task's files pass|unpacks to)",
     None),
])
def test_add_archive_is_capped_by_what_it_unpacks_to(tmp_path: Path, members: dict[str, int], why: str,
                                                     peak_mib: int | None) -> None:
    """The caps stat'ed the archive only (tens of KiB): its members were read whole into memory.
    A refused member is refused from its header, before it is read."""
    d = _word_count(tmp_path)
    (d / "environment" / "x.tar.gz").write_bytes(_tar_gz(members))
    (d / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nADD x.tar.gz /app/\n")
    tracemalloc.start()
    try:
        with pytest.raises(ClawloopError, match=r"environment/Dockerfile:2: " + why):
            load_harbor_task(d)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak_mib is None or peak < peak_mib << 20, f"{peak >> 20} MiB allocated to refuse it"


def test_set_uid_archive_member_is_one_line(tmp_path: Path) -> None:
    d = _word_count(tmp_path)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("suid")
        info.size, info.mode = 2, 0o4755
        tar.addfile(info, io.BytesIO(b"hi"))
    (d / "environment" / "x.tar.gz").write_bytes(buf.getvalue())
    (d / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nADD x.tar.gz /app/\n")
    with pytest.raises(ClawloopError, match=r"Dockerfile:2: ADD x.tar.gz: suid: mode 0o4755 ") as e:
        load_harbor_task(d)
    assert "\n" not in str(e.value)


def test_small_archive_still_unpacks(tmp_path: Path) -> None:
    d = _word_count(tmp_path)
    (d / "environment" / "x.tar.gz").write_bytes(_tar_gz({"data/a.txt": 3, "b.bin": 10}))
    (d / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nADD x.tar.gz /app/\n")
    t = load_harbor_task(d)
    assert t.files["/app/data/a.txt"].data() == bytes(3) and "/app/b.bin" in t.files


def test_env_expansion_is_bounded(tmp_path: Path) -> None:
    """`ENV A_k=$A_{k-1}` fifty times over, ten lines deep: 50**10 bytes from 2 KiB (MemoryError)."""
    d = _word_count(tmp_path)
    lines = ["FROM ubuntu:24.04", "ENV A0=xxxxxxxxxx"]
    lines += [f"ENV A{k}=" + f"${{A{k - 1}}}" * 50 for k in range(1, 11)]
    (d / "environment" / "Dockerfile").write_text("\n".join(lines) + "\n")
    with _deadline(30), pytest.raises(ClawloopError, match=r"Dockerfile:\d+: ENV: variables expand to more than"):
        load_harbor_task(d)


def test_tb1_yaml_aliases_are_bounded(tmp_path: Path) -> None:
    """Aliases nine wide and seven deep: a few hundred bytes that were copied per path into a
    pool line of tens of MiB."""
    y = "instruction: Create hello.txt in /app.\nx0: &a0 [" + ", ".join(["xxxxxxxx"] * 9) + "]\n"
    y += "".join(f"x{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 9) + "]\n" for k in range(1, 8))
    assert len(y) < 600
    with _deadline(30), pytest.raises(ClawloopError, match=r"tb1-task/task.yaml: more than \d+ MiB once its aliases"):
        load_harbor_task(_tb1(tmp_path, task_yaml=y))


def test_a_few_aliases_still_load(tmp_path: Path) -> None:
    y = "instruction: Create hello.txt in /app.\nbase: &b {image: x}\nother: *b\n"
    t = load_harbor_task(_tb1(tmp_path, task_yaml=y))
    assert t.metadata["harbor"]["task_yaml"] == {"base": {"image": "x"}, "other": {"image": "x"}}


def test_dotted_toml_key_40_deep_loads_quickly(tmp_path: Path) -> None:
    """harbor._prune (now documents.prune) called itself twice per level: 2**40 calls (a hang)."""
    d = _word_count(tmp_path)
    _toml_append(d, "[x]\n" + ".".join(["k"] * 40) + " = 1")
    with _deadline(20):
        t = load_harbor_task(d)
    assert "x" in t.metadata["harbor"]["task_toml"]


@pytest.mark.parametrize("deep", [
    "[x]\n" + ".".join(["k"] * 1200) + " = 1",  # tomllib is fine, the walks after it recursed
    "[x]\ny = " + "[" * 1200 + "]" * 1200,  # tomllib itself recurses
    '[metadata.clawloop]\nmetadata_json = ' + json.dumps("[" * 1200 + "]" * 1200),
])
def test_deep_toml_is_one_line(tmp_path: Path, deep: str) -> None:
    d = _word_count(tmp_path)
    _toml_append(d, deep)
    with pytest.raises(ClawloopError, match=r"word-count/task.toml: (metadata.clawloop.metadata_json: )?nested deeper"):
        load_harbor_task(d)
    [item] = load_suite(d).items
    assert item.task is None and "nested deeper" in (item.error or "")


def test_deep_yaml_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ClawloopError, match=r"task.yaml: nested deeper"):
        load_harbor_task(_tb1(tmp_path, task_yaml="instruction: x\nx: " + "[" * 1200 + "]" * 1200 + "\n"))


@pytest.mark.parametrize(("table", "value", "field"), [
    ("verifier", "inf", "verifier.timeout_sec"),
    ("agent", "1e308", "agent.timeout_sec"),
    ("verifier", "nan", "verifier.timeout_sec"),
])
def test_toml_timeouts_are_finite(tmp_path: Path, table: str, value: str, field: str) -> None:
    """`timeout_sec = inf` made eval and validate wait forever (and import wrote `null`)."""
    d = _word_count(tmp_path)
    text = (d / "task.toml").read_text()
    old = "timeout_sec = 60.0" if table == "verifier" else "timeout_sec = 300.0"
    (d / "task.toml").write_text(text.replace(old, f"timeout_sec = {value}"))
    with pytest.raises(ClawloopError, match=rf"word-count/task.toml: {field}: .*less than or equal"):
        load_harbor_task(d)
    out = tmp_path / "pool.jsonl"
    out.write_text("keep me\n")
    _refused(["tasks", "import", str(d), "--out", str(out)], names=field)
    assert out.read_text() == "keep me\n", "the existing pool was touched"


def test_tb1_timeouts_are_finite(tmp_path: Path) -> None:
    d = _tb1(tmp_path, task_yaml="instruction: x\nmax_test_timeout_sec: .inf\n")
    with pytest.raises(ClawloopError, match=r"tb1-task/task.yaml: max_test_timeout_sec: "):
        load_harbor_task(d)


@pytest.mark.parametrize(("field", "value"), [
    ("verifier_timeout_s", 1e308), ("agent_timeout_s", 1e300), ("command_timeout_s", 1e20), ("max_turns", 10**15),
])
def test_pool_limits_are_bounded(tmp_path: Path, field: str, value: float) -> None:
    pool = _pool(tmp_path, lambda line: line["limits"].update({field: value}))
    with pytest.raises(ClawloopError, match=rf"pool.jsonl:1: limits.{field}: .*less than or equal"):
        read_pool(pool)
    out = tmp_path / "kept.jsonl"
    _refused(["tasks", "validate", str(pool), "--out", str(out), "--rejections", str(tmp_path / "r.json")],
             names=f"limits.{field}")
    assert not out.exists() and not (tmp_path / "r.json").exists()


# ------------------------------------------------------------ C4: one line, not a traceback
@pytest.mark.parametrize("solution_yaml", [
    "42", "{a: 1}", "'echo hi'", "- {x: 1}", "- [1, 2]", "- 1\n", "- {command: [1]}", "[: bad",
    "- " + "[" * 1200 + "]" * 1200,
])
def test_odd_tb1_solution_yaml_is_one_line(tmp_path: Path, solution_yaml: str) -> None:
    d = _tb1(tmp_path, solution_yaml=solution_yaml)
    with pytest.raises(ClawloopError, match=r"tb1-task/solution.yaml: ") as e:
        load_harbor_task(d)
    assert "\n" not in str(e.value)


def test_tb1_solution_yaml_still_loads(tmp_path: Path) -> None:
    d = _tb1(tmp_path, solution_yaml="- touch /app/hello.txt\n- command: echo done\n  min_timeout_sec: 3\n")
    assert load_harbor_task(d).solution.steps == ["touch /app/hello.txt", "echo done"]  # type: ignore[union-attr]


@pytest.mark.parametrize(("toml", "field"), [
    ('provenance = "procedural"', "metadata.clawloop.provenance"),
    ("provenance = [1, 2]", "metadata.clawloop.provenance"),
    ("provenance = { routine = 3 }", "metadata.clawloop.provenance.routine"),
    ('solution_steps = "echo hi"', "metadata.clawloop.solution_steps"),
    ("solution_steps = [1, 2]", "metadata.clawloop.solution_steps"),
    ("solution_steps = [[\"a\"]]", "metadata.clawloop.solution_steps"),
])
def test_clawloop_table_of_the_wrong_type_is_one_line(tmp_path: Path, toml: str, field: str) -> None:
    d = _word_count(tmp_path)
    _toml_append(d, f"[metadata.clawloop]\n{toml}")
    with pytest.raises(ClawloopError, match=rf"word-count/task.toml: {field}: ") as e:
        load_harbor_task(d)
    assert "\n" not in str(e.value)


def _deep(n: int) -> dict[str, Any]:
    v: dict[str, Any] = {}
    cur = v
    for _ in range(n):
        cur["a"] = {}
        cur = cur["a"]
    return v


@pytest.mark.parametrize(("mutate", "names"), [
    (lambda line: line["files"].update({"/app/" + "/".join(["a"] * 3000): {"content": "x"}}), "files."),
    (lambda line: line["metadata"].update(deep=_deep(900)), "metadata: nested deeper"),
    (lambda line: line["metadata"]["harbor"].update(task_toml={"deep": _deep(900)}), "metadata: nested deeper"),
    (lambda line: line["files"].update({"/app/m": {"content": "x", "mode": 2**40}}), "mode"),
])
def test_export_of_a_hostile_pool_is_one_line(tmp_path: Path, mutate: Callable[[dict[str, Any]], None],
                                              names: str) -> None:
    """A mode of 2**40, a 3,000-deep path, a 900-deep metadata: `tasks export` gave a traceback
    (OverflowError, ENAMETOOLONG, RecursionError) and left half a task directory behind. With
    `--force` over an earlier export, that export is still whole after the refusal."""
    pool = _pool(tmp_path, mutate)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    try:
        with _deadline(60):
            msg = _refused(["tasks", "export", str(pool), "--out", str(out), "--force"], names=names)
        assert msg.startswith(f"{pool}:1: "), msg
        assert [p.name for p in out.iterdir()] == ["keep.txt"] and (out / "keep.txt").read_text() == "mine"
    finally:  # a 3,000-deep tree written by a regression would break pytest's own cleanup (recursive)
        subprocess.run(["rm", "-rf", "--", str(out / "word-count")], check=False)
