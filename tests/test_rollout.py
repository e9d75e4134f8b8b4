"""Lockstep rollouts: batching, Parquet parts, bad model output, broken setup/verifier, real tasks."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from scripted_policy import ScriptedPolicy

from clawloop.core.agent import episode
from clawloop.core.agent.harness import HarnessConfig
from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
from clawloop.core.tasks.environment import TaskEnvironment
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.core.tasks.verifier import Verdict
from clawloop.core.trajectory import EPISODE_SCHEMA, OUTCOMES, STEP_SCHEMA, TERMINATIONS
from clawloop.policy.types import SamplingParams
from sandbox.base import ExecResult, SandboxConfig


def bash(cmd: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": cmd}}) + "\n</tool_call>"


SUBMIT = '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'

TEST_SH = 'if [ "$(cat /workspace/{f} 2>/dev/null)" = "{v}" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'


def make_task(name: str, value: str, **kw: Any) -> Task:
    return Task(instruction=f"Write {value} into {name}.", skill="files", level=2,
                verifier=Verifier(files={"test.sh": FileSpec(content=TEST_SH.format(f=name, v=value))}),
                solution=Solution(steps=[f"echo {value} > {name}"]), **kw)


# --- a fake sandbox: commands are recorded, files live in a dict -------------------------------

class FakeSandbox:
    opened: list[FakeSandbox] = []
    lock = threading.Lock()

    def __init__(self) -> None:
        self.config = SandboxConfig()
        self.commands: list[str] = []
        self.closed = False
        with self.lock:
            FakeSandbox.opened.append(self)

    def exec(self, command: str, timeout: float = 60.0, *, cwd: str | None = None,
             env: dict[str, str] | None = None) -> ExecResult:
        self.commands.append(command)
        if command == "explode":
            raise RuntimeError("sandbox died")
        return ExecResult(0 if "fail" not in command else 1, f"ran {command}\n", False, 0.001)

    def close(self) -> None:
        self.closed = True


class FakeEnvironment(TaskEnvironment):
    """The real TaskEnvironment on a FakeSandbox; setup and verifier scripted by the instruction."""

    def open(self) -> FakeEnvironment:
        if self._sb is None:
            self._sb = FakeSandbox()  # type: ignore[assignment]
        return self

    def prepare(self) -> None:
        if "badsetup" in self.task.instruction:
            raise RuntimeError("setup exploded")

    def verify(self, messages: list[dict[str, Any]] | None = None) -> Any:
        if "badverifier" in self.task.instruction:
            return Verdict("error", None, "the verifier wrote no reward file", "")
        ok = any(c.startswith("echo") for c, _ in self.steps)
        return Verdict("passed" if ok else "failed", 1.0 if ok else 0.0, None, "")


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch) -> type[FakeSandbox]:
    FakeSandbox.opened = []
    monkeypatch.setattr(episode, "TaskEnvironment", FakeEnvironment)
    return FakeSandbox


def read(out: Path, prefix: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for part in sorted(out.glob(f"{prefix}-*.parquet")):
        t = pq.read_table(part)
        assert t.schema.equals(EPISODE_SCHEMA if prefix == "episodes" else STEP_SCHEMA)
        rows += t.to_pylist()
    return rows


def test_lockstep_batches_and_parts(fake: type[FakeSandbox], tmp_path: Path) -> None:
    tasks = [make_task(f"f{i}.txt", f"v{i}") for i in range(5)]
    # episodes end after 1, 2 or 3 turns depending on the sample, so the batch refills mid-run
    def reply(conv: list[dict[str, Any]]) -> str:
        n = sum(m["role"] == "assistant" for m in conv)
        sample_turns = 1 + len(conv[1]["content"]) % 3
        return SUBMIT if n >= sample_turns else bash(f"echo {n}")
    policy = ScriptedPolicy(reply)
    res = run_rollouts(tasks, policy,
                       RolloutConfig(k=2, batch_size=4, backend="fake", iteration=3, suite="unit", flush_every=3),
                       out_dir=tmp_path, progress=False)
    assert len(res) == 10 and [(r.task_id, r.sample) for r in res] == [
        (t.id, s) for t in tasks for s in range(2)]
    assert max(policy.calls) == 4 and all(c >= 1 for c in policy.calls)
    assert sum(policy.calls) == sum(r.n_turns for r in res)
    assert all(sb.closed for sb in fake.opened) and len(fake.opened) == 10
    eps = read(tmp_path, "episodes")
    parts = [pq.read_table(p).num_rows for p in sorted(tmp_path.glob("episodes-*.parquet"))]
    assert parts == [3, 3, 3, 1]  # written in parts as episodes finished
    assert sorted(e["episode_id"] for e in eps) == sorted(r.episode_id for r in res)
    assert len({e["episode_id"] for e in eps}) == 10
    for e in eps:
        assert e["suite"] == "unit" and e["iteration"] == 3 and e["policy_id"] == "scripted"
        assert e["skill"] == "files" and e["level"] == 2 and e["termination"] == "submit"
        assert e["outcome"] in OUTCOMES and e["termination"] in TERMINATIONS
        msgs = json.loads(e["messages"])
        assert msgs[0]["role"] == "system" and msgs[-1]["tool_calls"][0]["function"]["name"] == "submit"
    steps = read(tmp_path, "steps")
    assert len(steps) == sum(e["n_turns"] for e in eps)
    # a second run into the same directory adds parts, never overwrites
    run_rollouts(tasks[:1], policy, RolloutConfig(k=1, batch_size=2, backend="fake"), out_dir=tmp_path,
                 progress=False)
    assert len(read(tmp_path, "episodes")) == 11


class LoopingPolicy:
    """A greedy policy stuck on `ls` (any turn, at temperature 0); sampled, it writes the file."""

    policy_id = "looping"

    def __init__(self) -> None:
        self.temperatures: list[tuple[float, int]] = []

    def generate(self, conversations: Any, sampling: Any, *, tools: Any = None) -> list[Any]:
        from clawloop.policy.types import Generation

        self.temperatures.append((sampling.temperature, len(conversations)))
        out = []
        for conv in conversations:
            ran = [m for m in conv if m["role"] == "assistant"]
            text = (SUBMIT if any("echo" in json.dumps(m) for m in ran) else
                    bash("echo v0 > f0.txt") if sampling.temperature > 0 and ran else bash("ls"))
            out.append(Generation(text, 10, 5))
        return out


def test_a_repeated_command_is_drawn_again_when_the_harness_says_so(fake: type[FakeSandbox]) -> None:
    """repeat_resample: a reply that re-sends the last command is sampled once more before it runs;
    without it the greedy loop runs to the turn limit."""
    tasks = [make_task("f0.txt", "v0"), make_task("f1.txt", "v1")]
    stuck = LoopingPolicy()
    greedy = SamplingParams(temperature=0.0, seed=0)
    looped = run_rollouts(tasks, stuck, RolloutConfig(backend="fake", batch_size=2, sampling=greedy,
                                                      harness=HarnessConfig(max_turns=4)), progress=False)
    assert [r.termination for r in looped] == ["max_turns", "max_turns"]
    assert [s.command for s in looped[0].steps] == ["ls"] * 4 and not any(r.passed for r in looped)
    assert {t for t, _ in stuck.temperatures} == {0.0}

    redrawn = LoopingPolicy()
    res = run_rollouts(tasks, redrawn, RolloutConfig(backend="fake", batch_size=2, sampling=greedy,
                                                     harness=HarnessConfig(max_turns=4, repeat_resample=0.7)),
                       progress=False)
    assert [s.command for s in res[0].steps] == ["ls", "echo v0 > f0.txt", None]
    assert [r.termination for r in res] == ["submit", "submit"] and all(r.passed for r in res)
    # each repeating reply is drawn once more, at the harness's temperature; the others stay greedy
    assert sum(n for t, n in redrawn.temperatures if t == 0.7) == 2
    assert {t for t, _ in redrawn.temperatures} == {0.0, 0.7}
    assert res[0].completion_tokens == 5 + 10 + 5  # both draws of the second turn count


def test_rollouts_show_progress(fake: type[FakeSandbox], capsys: pytest.CaptureFixture[str]) -> None:
    """Episodes done, passed so far and generated tokens feed the progress; outside a terminal
    it is plain lines on stderr, the first at once (a stage log shows life from the start)."""
    import io

    from clawloop.core.progress import Progress

    tasks = [make_task(f"f{i}.txt", f"v{i}") for i in range(3)]
    policy = ScriptedPolicy(lambda conv: SUBMIT if len(conv) > 2 else bash("echo hi"))
    shown = Progress("eval model", 6, live=False, stream=io.StringIO(), ticker=False)
    with shown:
        res = run_rollouts(tasks, policy, RolloutConfig(k=2, batch_size=4, backend="fake"), progress=shown)
    assert shown.done == 6 and shown.counts["passed"] == sum(r.passed for r in res) == 6
    assert shown.tokens == sum(r.completion_tokens for r in res) > 0
    run_rollouts(tasks[:1], policy, RolloutConfig(k=1, batch_size=1, backend="fake", suite="probe"), progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("[probe] 0/1 episodes (0%)")
    assert lines[-1].startswith("[probe] 1/1 episodes (100%) · passed 1 · ") and "done in" in lines[-1]


def test_bad_output_never_crashes(fake: type[FakeSandbox], tmp_path: Path) -> None:
    replies = {
        "a": ["no tool call at all", '<tool_call>{"name": "bash", "arguments": {"command": "ls"', bash("ls")],
        "b": [call_unknown := '<tool_call>{"name": "python", "arguments": {}}</tool_call>'] * 3,
        "c": ["x" * 10_000_000] * 3,
        "d": [b"\xff\xfe\xfd" + bash("cat \udcff").encode("utf-8", "surrogatepass"), b"\xc3\x28\xa0\xa1"] * 3,
        "e": [bash("explode")],
    }
    tasks = {k: make_task(f"{k}.txt", k) for k in replies}

    def reply(conv: list[dict[str, Any]]) -> Any:
        key = conv[1]["content"].split()[1]
        n = sum(m["role"] == "assistant" for m in conv)
        seq = replies[key]
        return seq[n] if n < len(seq) else SUBMIT
    res = run_rollouts(list(tasks.values()), ScriptedPolicy(reply),
                       RolloutConfig(k=1, batch_size=8, backend="fake", harness=HarnessConfig(max_turns=5, max_format_errors=3)),
                       out_dir=tmp_path, progress=False)
    by = {r.task_id: r for r in res}
    a, b, c, d, e = (by[tasks[k].id] for k in "abcde")
    assert (a.n_format_errors, a.termination, a.outcome) == (2, "submit", "failed")
    assert (b.n_format_errors, b.termination) == (3, "format_errors")
    assert (c.n_format_errors, c.termination) == (3, "format_errors")
    assert (d.termination, d.n_format_errors, d.outcome) == ("max_turns", 2, "failed") and call_unknown
    assert (e.outcome, e.termination) == ("error", "error") and "sandbox died" in e.error
    steps = read(tmp_path, "steps")
    a_steps = [s for s in steps if s["episode_id"] == a.episode_id]
    assert [(s["format_error"], s["tool"], s["command"]) for s in a_steps] == [
        (True, None, None), (True, None, None), (False, "bash", "ls"), (False, "submit", None)]
    assert max(len(s["content"]) for s in steps) <= HarnessConfig().max_reply_chars
    d_steps = [s for s in steps if s["episode_id"] == d.episode_id]
    assert d_steps[0]["command"] == "cat \ufffd" and d_steps[0]["content"].startswith("\ufffd")
    assert [s["format_error"] for s in d_steps] == [False, True, False, True, False]


def test_setup_and_verifier_breakage_are_errors(fake: type[FakeSandbox], tmp_path: Path) -> None:
    tasks = [Task(instruction="badsetup here", verifier=Verifier(files={"test.sh": FileSpec(content="x")})),
             Task(instruction="badverifier here", verifier=Verifier(files={"test.sh": FileSpec(content="x")})),
             Task(instruction="needs image", needs_image="python:3.12 with gcc",
                  verifier=Verifier(files={"test.sh": FileSpec(content="x")}))]
    res = run_rollouts(tasks, ScriptedPolicy([SUBMIT]), RolloutConfig(k=2, batch_size=8, backend="bwrap"),
                       out_dir=tmp_path, progress=False)
    assert [r.outcome for r in res] == ["error", "error", "error", "error", "skipped", "skipped"]
    assert "setup exploded" in res[0].error and "no reward file" in res[2].error
    assert "Docker image" in res[4].error and res[4].n_turns == 0
    eps = read(tmp_path, "episodes")
    assert all(e["reward"] is None and e["passed"] is False for e in eps)
    assert {e["termination"] for e in eps} == {"error", "submit"}


def test_policy_failure_is_error_then_raises(fake: type[FakeSandbox], tmp_path: Path) -> None:
    class Flaky:
        policy_id = "flaky"

        def __init__(self, fail: int) -> None:
            self.fail = fail

        def generate(self, convs: Any, sampling: Any, *, tools: Any = None) -> Any:
            if self.fail:
                self.fail -= 1
                raise ConnectionError("endpoint down")
            return ScriptedPolicy([SUBMIT]).generate(convs, sampling)
    tasks = [make_task("a.txt", "a"), make_task("b.txt", "b")]
    res = run_rollouts(tasks, Flaky(1), RolloutConfig(k=1, batch_size=1, backend="fake"), out_dir=tmp_path,
                       progress=False)
    assert [r.outcome for r in res] == ["error", "failed"] and "endpoint down" in res[0].error
    with pytest.raises(ConnectionError):
        run_rollouts(tasks * 3, Flaky(99), RolloutConfig(k=1, batch_size=1, backend="fake"), progress=False)
    assert all(sb.closed for sb in fake.opened)


# --- real sandbox, real tasks ------------------------------------------------------------------

def _real_backend() -> str:
    try:
        import sandbox

        if not hasattr(sandbox, "open"):
            pytest.skip("sandbox.open is not available yet")
    except ImportError:
        pytest.skip("no sandbox package")
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    return "bwrap"


def test_scripted_policy_on_real_tasks(tmp_path: Path) -> None:
    backend = _real_backend()
    good, bad = make_task("hello.txt", "hi"), make_task("other.txt", "there")
    scripts = {
        good.instruction: ["I'll write it.\n" + bash("echo hi > hello.txt"), bash("cat hello.txt"), SUBMIT],
        bad.instruction: [bash("echo wrong > other.txt; exit 3"), "oops, no call", SUBMIT],
    }
    policy = ScriptedPolicy(lambda conv: scripts[conv[1]["content"]][sum(m["role"] == "assistant" for m in conv)])
    res = run_rollouts([good, bad], policy, RolloutConfig(k=1, batch_size=2, backend=backend, suite="hand"),
                       out_dir=tmp_path, progress=False)
    assert [(r.outcome, r.reward, r.termination) for r in res] == [
        ("passed", 1.0, "submit"), ("failed", 0.0, "submit")]
    eps = {e["task_id"]: e for e in read(tmp_path, "episodes")}
    e = eps[good.id]
    assert (e["n_turns"], e["n_format_errors"], e["passed"], e["error"]) == (3, 0, True, None)
    assert e["episode_id"] == res[0].episode_id and e["episode_id"].startswith(f"{good.id}-0-")
    msgs = json.loads(e["messages"])
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert msgs[5]["content"] == "hi\n[exit code 0]"
    steps = sorted((s for s in read(tmp_path, "steps")), key=lambda s: (s["episode_id"], s["step"]))
    g = [s for s in steps if s["episode_id"] == e["episode_id"]]
    assert [(s["step"], s["tool"], s["command"], s["exit_code"], s["output"], s["format_error"]) for s in g] == [
        (0, "bash", "echo hi > hello.txt", 0, "[exit code 0]", False),
        (1, "bash", "cat hello.txt", 0, "hi\n[exit code 0]", False),
        (2, "submit", None, None, None, False)]
    assert g[0]["content"].startswith("I'll write it.") and all(s["role"] == "assistant" for s in g)
    b = [s for s in steps if s["episode_id"] == eps[bad.id]["episode_id"]]
    assert [(s["exit_code"], s["format_error"]) for s in b] == [(3, False), (None, True), (None, False)]
    assert eps[bad.id]["n_format_errors"] == 1 and eps[bad.id]["reward"] == 0.0


def test_command_timeout_on_real_sandbox(tmp_path: Path) -> None:
    backend = _real_backend()
    task = make_task("t.txt", "x")
    policy = ScriptedPolicy([bash("sleep 30"), SUBMIT])
    res = run_rollouts([task], policy, RolloutConfig(backend=backend, harness=HarnessConfig(command_timeout_s=0.5)),
                       out_dir=tmp_path, progress=False)
    assert res[0].outcome == "failed" and res[0].duration_s < 20
    s = read(tmp_path, "steps")[0]
    assert s["timed_out"] and "timed out" in s["output"]
