"""Claw-Eval-Live adapter: loading, snapshot + host grading, skips and grader errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from clawloop.core.agent.oracle import run_episode
from clawloop.core.tasks import claw_eval_grading as ceg
from clawloop.core.tasks import claw_eval_live as cel
from clawloop.core.tasks.formats import load_suite_any
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "benchmarks" / "fixtures" / "claw-eval-live"
GRADER_ROOT = SUITE / "_grader_root"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


@pytest.fixture(autouse=True)
def _no_env_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cel.GRADER_ROOT_ENV, raising=False)


def copy_task(tmp_path: Path, name: str = "CTB_FX01_log_error_count", grader: str | None = None,
              solve: str | None = None) -> Path:
    d = tmp_path / "tasks" / name
    shutil.copytree(SUITE / "tasks" / name, d)
    if grader is not None:
        (d / "grader.py").write_text(grader)
    if solve is not None:
        (d / "solution" / "solve.sh").write_text(solve)
    return d


GRADER_HEAD = """from liveclaw_500.graders.base import AbstractGrader
from liveclaw_500.models.trace import DimensionScores


class G(AbstractGrader):
    def grade(self, messages, dispatches, task, audit_data=None, judge=None, media_events=None,
              env_snapshot=None):
"""


def test_load_maps_yaml() -> None:
    t = cel.load_claw_eval_task(SUITE / "tasks" / "CTB_FX01_log_error_count", grader_root=GRADER_ROOT)
    assert t.instruction.startswith("Container files:")
    assert set(t.files) == {"/workspace/logs/app.log"} and t.workdir == "/workspace"
    assert {"grader.py", "grader_files/fixtures/verify_counts.py", "clawloop_snapshot.py",
            "clawloop_snapshot_spec.json", "test.sh"} <= set(t.verifier.files)
    spec = json.loads(t.verifier.files["clawloop_snapshot_spec.json"].content)
    assert spec["commands"][0] == "python /workspace/fixtures/verify_counts.py" and spec["timeout"] == 10
    assert (t.skill, t.level, t.limits.agent_timeout_s, t.limits.max_turns) == ("terminal", 1, 300.0, 20)
    assert t.needs_image is None and t.solution is not None
    rec = t.metadata["claw_eval_live"]
    assert rec["task_yaml"]["task_id"] == "CTB_FX01_log_error_count"
    assert rec["grader_root"] == str(GRADER_ROOT.resolve()) and rec["pass_threshold"] == 0.8
    # a directory in sandbox_files brings its tree; env_snapshot_timeout sets the verifier budget
    t3 = cel.load_claw_eval_task(SUITE / "tasks" / "CTB_FX03_config_audit")
    assert set(t3.files) == {f"/workspace/configs/{n}.ini" for n in ("api", "billing", "search")}
    t2 = cel.load_claw_eval_task(SUITE / "tasks" / "CTB_FX02_script_repair")
    assert t2.limits.verifier_timeout_s == 3 * 20 + 60


def test_services_task_is_skipped() -> None:
    t = cel.load_claw_eval_task(SUITE / "tasks" / "CTB_FX04_inbox_digest")
    assert t.needs_image and "gmail" in t.needs_image
    for backend in ("bwrap", "docker"):
        rec = run_episode(t, "noop", backend)
        assert rec.outcome == "skipped" and rec.reason == "needs Claw-Eval-Live mock HTTP services (gmail)"


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda y: y.replace("  text: |", "  txt: |"), "task.yaml: prompt.text: missing"),
    (lambda y: y.replace("task_id: CTB_FX01_log_error_count", "task_id: ''"), "task.yaml: task_id: missing"),
    (lambda y: y.replace("  - logs/app.log", "  - logs/nope.log"), "sandbox_files[0]: logs/nope.log not found"),
    (lambda y: y.replace("  - logs/app.log", "  - ../x"), "sandbox_files[0]: must be relative"),
    (lambda y: y + "env_snapshot_files: 3\n", "env_snapshot_files: expected a list of strings"),
    (lambda y: "{{{", "task.yaml: not valid YAML"),
])
def test_bad_task_yaml(tmp_path: Path, edit: object, needle: str) -> None:
    d = copy_task(tmp_path)
    y = d / "task.yaml"
    y.write_text(edit(y.read_text()))  # type: ignore[operator]
    with pytest.raises(ClawloopError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        cel.load_claw_eval_task(d)


def test_missing_grader_is_an_error(tmp_path: Path) -> None:
    d = copy_task(tmp_path)
    (d / "grader.py").unlink()
    with pytest.raises(ClawloopError, match="grader.py: file not found"):
        cel.load_claw_eval_task(d)


def test_trace_shapes_dispatches() -> None:
    msgs = ceg.transcript_from_steps(SimpleNamespace(instruction="do it"),  # type: ignore[arg-type]
                                     [("ls", SimpleNamespace(output="a.txt", exit_code=0)),
                                      ("false", SimpleNamespace(output="", exit_code=1))])
    trace, calls = ceg._trace([{"role": "system", "content": "sys"}, *msgs,
                               {"role": "assistant", "content": "done"}], "t")
    assert [m["message"]["role"] for m in trace] == ["system", "user", "assistant", "user", "assistant",
                                                     "user", "assistant"]
    assert trace[-1]["message"]["content"] == "done"
    assert [c["tool_name"] for c in calls] == ["sandbox_shell_exec"] * 2
    assert calls[0]["request_body"] == {"command": "ls"}
    assert calls[0]["response_body"] == {"exit_code": 0, "stdout": "a.txt", "stderr": ""}
    assert calls[1]["response_body"]["exit_code"] == 1


@needs_bwrap
def test_fixture_suite_noop_fails() -> None:  # the oracle over the suite: tests/test_formats.py (CLI)
    suite = load_suite_any(SUITE, grader_root=GRADER_ROOT)
    names = [i.name for i in suite.items]
    assert names == ["CTB_FX01_log_error_count", "CTB_FX02_script_repair", "CTB_FX03_config_audit",
                     "CTB_FX04_inbox_digest"]
    for item in suite.items:
        assert item.task is not None
        bad = run_episode(item.task, "noop", suite=suite.name, name=item.name)
        assert bad.benchmark == "claw-eval-live"
        if item.name == "CTB_FX04_inbox_digest":
            assert bad.outcome == "skipped"
            continue
        assert bad.outcome == "failed" and bad.reward == 0.0, (item.name, bad.reason)
        assert bad.scores is not None and {"completion", "robustness", "safety"} <= set(bad.scores)
        assert json.loads(json.dumps(bad.to_json()))["scores"]["completion"] == 0.0


@needs_bwrap
def test_partial_credit_and_threshold(tmp_path: Path) -> None:
    solve = ("#!/bin/bash\nmkdir -p /workspace/output\n"
             "awk '$2 == \"ERROR\"' /workspace/logs/app.log | wc -l > /workspace/output/error_count.txt\n")
    d = copy_task(tmp_path, solve=solve)
    rec = run_episode(cel.load_claw_eval_task(d, grader_root=GRADER_ROOT), "oracle")
    assert (rec.outcome, rec.reward) == ("failed", 0.6)
    low = run_episode(cel.load_claw_eval_task(d, grader_root=GRADER_ROOT, pass_threshold=0.5), "oracle")
    assert (low.outcome, low.reward) == ("passed", 0.6)


@needs_bwrap
@pytest.mark.parametrize(("grader", "needle"), [
    (GRADER_HEAD + "        return DimensionScores(completion=1 / 0)\n",
     "grader crashed: ZeroDivisionError: division by zero (grader.py line 8)"),
    (GRADER_HEAD + "        return {'robustness': 1.0}\n", "grader returned no completion score in [0, 1]"),
    (GRADER_HEAD + "        return {'completion': 3}\n", "grader returned no completion score in [0, 1]"),
    ("import liveclaw_missing_package\n", "grader package not available under --grader-root"),
    ("def broken(:\n", "grader.py failed to import: SyntaxError"),
    ("X = 1\n", "grader.py defines no grader class"),
])
def test_grader_trouble_is_an_error(tmp_path: Path, grader: str, needle: str) -> None:
    d = copy_task(tmp_path, grader=grader)
    rec = run_episode(cel.load_claw_eval_task(d, grader_root=GRADER_ROOT), "oracle", name="t")
    assert rec.outcome == "error" and rec.reward is None
    assert rec.reason is not None and needle in rec.reason, rec.reason


@needs_bwrap
def test_no_grader_root_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = cel.load_claw_eval_task(SUITE / "tasks" / "CTB_FX01_log_error_count")
    rec = run_episode(t, "oracle")
    assert rec.outcome == "error" and "grader package not available: give --grader-root" in (rec.reason or "")
    t2 = cel.load_claw_eval_task(SUITE / "tasks" / "CTB_FX01_log_error_count", grader_root=tmp_path / "nowhere")
    assert "is not a directory" in (run_episode(t2, "noop").reason or "")
    monkeypatch.setenv(cel.GRADER_ROOT_ENV, str(GRADER_ROOT))
    assert run_episode(t, "oracle").outcome == "passed"


class _RecordingSandbox:
    """Records what a verify sequence does to a sandbox (no command runs)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.hosts: list[Path] = []

    def mount(self, host: Path, target: str, writable: bool = False) -> None:
        self.hosts.append(Path(host))
        self.calls.append(("mount", target))

    def unmount(self, target: str) -> None:
        self.calls.append(("unmount", target))

    def scratch_dir(self, prefix: str) -> Path:
        import tempfile

        return Path(tempfile.mkdtemp(prefix=prefix))

    def trusted_root(self) -> object:
        import contextlib

        self.calls.append(("trusted_root", None))
        return contextlib.nullcontext()

    def exec(self, command: str, *, timeout: float, cwd: str | None = None,
             env: dict[str, str] | None = None) -> object:
        from sandbox.base import ExecResult

        self.calls.append(("exec", (command, cwd, env)))
        return ExecResult(0, "", False, 0.0)


def test_claw_eval_live_verifies_through_the_episode_protocol() -> None:
    """Issue #18 said the Claw-Eval-Live verify sequence lost the standard verify's quoting, verifier env
    and clean-up. Both run `tasks.verifier.run_verifier` now: the same mounts, the quoted entry
    command, the clean-world env, every host dir removed afterwards."""
    from clawloop.core.tasks import adapters, verifier

    task = cel.load_claw_eval_task(SUITE / "tasks" / "CTB_FX01_log_error_count", grader_root=GRADER_ROOT)
    plain = task.model_copy(update={"metadata": {}})
    seqs = []
    assert [adapters.adapter_for(t).name for t in (plain, task)] == ["standard", "claw-eval-live"]
    for t in (plain, task):
        sb = _RecordingSandbox()
        assert adapters.adapter_for(t).verify(sb, t, None, ()).outcome == "error"  # no reward, no snapshot
        assert not any(h.exists() for h in sb.hosts), "a host dir of the verifier was left behind"
        seqs.append(sb.calls)
    assert seqs[0] == seqs[1]
    command, cwd, env = next(arg for op, arg in seqs[1] if op == "exec")
    assert command == verifier.verifier_command(task) and cwd == task.workdir and env == verifier.verifier_env(task)
    mounted = [arg for op, arg in seqs[1] if op == "mount"]
    assert sorted(mounted) == sorted(arg for op, arg in seqs[1] if op == "unmount")
