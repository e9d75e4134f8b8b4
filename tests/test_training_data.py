"""Training data: params, reference trajectories in bwrap, self-generated rollouts, mixing, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clawloop.config.train import TrainParams, field_help, resolve_bf16
from clawloop.core.agent.harness import HarnessConfig, initial_messages
from clawloop.core.agent.tool_calls import TOOLS
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.errors import ClawloopError
from clawloop.phases.train import data as tdata
from clawloop.phases.train.reference import call_text, reference_trajectories

TEST_SH = ('if [ "$(cat /workspace/{f} 2>/dev/null)" = "{v}" ]; then echo 1; else echo 0; fi '
           '> /logs/verifier/reward.txt')


def make_task(name: str, value: str, steps: list[str] | None = None, **kw: Any) -> Task:
    return Task(instruction=f"Write {value} into {name}.", skill="files", level=1,
                verifier=Verifier(files={"test.sh": FileSpec(content=TEST_SH.format(f=name, v=value))}),
                solution=Solution(steps=steps or [f"echo {value} > {name}"]), **kw)


# --- params ------------------------------------------------------------------------------------

def test_profiles_and_overrides() -> None:
    cpu, gpu = TrainParams.for_profile("cpu"), TrainParams.for_profile("gpu")
    assert cpu.sft.learning_rate == 1e-3 and not cpu.sft.packing and not cpu.sft.gradient_checkpointing
    assert gpu.sft.learning_rate == 1e-5 and gpu.grpo.use_vllm and gpu.grpo.beta > 0
    p = TrainParams.from_mapping({"profile": "gpu", "sft": {"max_steps": 7, "lora": {"r": 8}}})
    assert p.sft.max_steps == 7 and p.sft.learning_rate == 1e-5 and p.sft.lora and p.sft.lora.r == 8
    with pytest.raises(ClawloopError, match=r"params: sft.nope: unknown key"):
        TrainParams.from_mapping({"sft": {"nope": 1}})
    with pytest.raises(ClawloopError, match="profile"):
        TrainParams.from_mapping({"profile": "tpu"})
    names = [n for n, _, h in field_help(cpu) if h]
    assert "sft.learning_rate" in names and "grpo.beta" in names and "data.self_fraction" in names
    assert resolve_bf16("bfloat16") and not resolve_bf16("float32")


def test_params_yaml_section(tmp_path: Path) -> None:
    f = tmp_path / "params.yaml"
    f.write_text("train:\n  profile: cpu\n  sft:\n    max_steps: 3\n")
    assert TrainParams.from_yaml(f, "train", {"grpo": {"beta": 0.1}}).sft.max_steps == 3
    with pytest.raises(ClawloopError, match="section not found"):
        TrainParams.from_yaml(f, "loop.train")


# --- reference trajectories (real bwrap sandboxes) -------------------------------------------

def test_reference_trajectories_keep_only_passing_episodes() -> None:
    good = make_task("a.txt", "alpha", ["ls", "echo alpha > a.txt"])
    wrong = make_task("b.txt", "beta", ["echo nope > b.txt"])
    too_long = make_task("c.txt", "gamma", [f"echo {i}" for i in range(5)] + ["echo gamma > c.txt"],
                         limits={"max_turns": 3})
    broken = make_task("d.txt", "delta", setup=["exit 3"])
    nosol = Task(instruction="x", verifier=good.verifier)
    kept, results = reference_trajectories([good, wrong, too_long, broken, nosol], "bwrap", workers=3)
    assert [r.outcome for r in results] == ["passed", "failed", "skipped", "error", "skipped"]
    assert len(kept) == 1 and kept[0].task_id == good.id and kept[0].source == "reference"
    m = kept[0].messages
    assert m[:2] == initial_messages(good)
    assert [x["role"] for x in m] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert m[2]["tool_calls"][0]["function"] == {"name": "bash", "arguments": {"command": "ls"}}
    assert m[3]["content"].endswith("[exit code 0]")
    assert m[-1]["tool_calls"][0]["function"]["name"] == "submit"


def test_reference_observations_are_real() -> None:
    task = make_task("n.txt", "one", ["printf 'x\\ny\\n' > tmp.txt", "wc -l < tmp.txt", "false",
                                      "echo one > n.txt"])
    kept, _ = reference_trajectories([task], "bwrap", harness_config=HarnessConfig(), workers=1)
    tools = [m["content"] for m in kept[0].messages if m["role"] == "tool"]
    assert tools[1] == "2\n[exit code 0]" and tools[2] == "[exit code 1]"
    assert call_text("bash", {"command": "ls"}) == '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'


def test_process_shaped_references_inspect_act_check_then_submit() -> None:
    """The process shape looks first and checks what the steps wrote, each call after a thought line;
    the verifier still decides; a solution too long for the turn limit replays plain."""
    from clawloop.phases.train.reference import INSPECT, check_command, plan_calls, written_paths

    task = make_task("a.txt", "alpha", ["mkdir -p out", "echo alpha > a.txt && sort a.txt | tee out/s.txt"])
    assert written_paths(task.solution.steps) == ["a.txt", "out/s.txt"]
    assert check_command(task.solution.steps) == "head -n 20 -- a.txt && head -n 20 -- out/s.txt"
    assert check_command(["rm -f x", "echo hi 2>/dev/null"]) == "ls -la"
    assert [c[:2] for c in plan_calls(["a", "b", "c", "d"], "process", 6)] == [("", c) for c in "abcd"]  # 4 + 3 > 6
    kept, results = reference_trajectories([task], "bwrap", workers=1, shape="process",
                                           harness_config=HarnessConfig(max_turns=6))
    assert [r.outcome for r in results] == ["passed"]
    m = kept[0].messages
    calls = [x for x in m if x["role"] == "assistant"]
    commands = [c["tool_calls"][0]["function"]["arguments"].get("command") for c in calls]
    assert commands == [INSPECT[1], *task.solution.steps, check_command(task.solution.steps), None]
    assert calls[0]["content"].strip() == INSPECT[0] and "check the result" in calls[-2]["content"]
    tools = [x["content"] for x in m if x["role"] == "tool"]
    assert tools[-1].startswith("alpha\n") and "==> a.txt" not in tools[-1]  # the real file, as head shows one
    assert tdata.process_score(m) == 2 and kept[0].meta["shape"] == "process"
    plain, _ = reference_trajectories([task], "bwrap", workers=1)
    assert tdata.process_score(plain[0].messages) == 0


def test_the_closing_check_names_what_the_last_step_changed() -> None:
    """A step that writes no file a regex can name is still checked by name: the moved file, the
    edited file, the archive's listing, the mode, the log. Each check only looks (process_score's own
    classifier says so), keeps the step's `cd`, and a pipeline or unknown verb falls back to `ls -la`."""
    from clawloop.phases.train.reference import check_command, named_check

    cases = {
        "mv a.txt b.txt": "ls -la -- b.txt", "cp -r src dst/": "ls -la -- dst/", "mkdir -p a/b": "ls -la -- a/b",
        "chmod +x run.sh": "ls -ld -- run.sh", "ln -s target link": "ls -ld -- link",
        "sed -i '/^$/d' notes.md": "head -n 20 -- notes.md", "gzip app.log": "ls -la -- app.log.gz",
        "tar -czf out.tgz logs": "tar -tzf out.tgz", "tar cf out.tar logs": "tar -tf out.tar",
        "find src -name '*.pyc' -delete": "find src -name '*.pyc'", "git commit -am 'Fix it'": "git log --oneline -n 3",
        "git init repo": "git -C repo status --short --branch", "git checkout -- a.py": "git status --short",
        "cd /workspace && mv a b": "cd /workspace && ls -la -- b",
    }
    for step, check in cases.items():
        assert named_check(step) == check, step
        assert not tdata.is_write(check), check
    for step in ["grep a b > c", "cat a | sort", "rm x", "echo `id`", "mv $(ls) d", "ls && mv a b", "python3 fix.py",
                 "for f in *; do rm $f; done", "sed -i 's/a/b/ f"]:
        assert named_check(step) is None, step
    assert check_command(["mkdir d", "mv a.txt d/", "rm -f x"]) == "ls -la -- d/"  # the last step we can name
    assert check_command(["rm -f x"]) == "ls -la"


def test_quiet_checks_print_nothing_when_the_act_worked() -> None:
    """`checks: quiet` ends a change on a test, not a look: InterCode grades the last command's output,
    empty after a change. Each is still a look (process_score counts it), keeps the step's `cd`, and a
    replay with nothing named to test ends without a check. In a real sandbox the test prints nothing
    and the verifier still passes."""
    from clawloop.phases.train.reference import check_command, named_check, plan_calls

    cases = {
        "mv a.txt b.txt": "test -e b.txt", "cp -r src dst/": "test -e dst/", "mkdir -p a/b": "test -d a/b",
        "chmod +x run.sh": "test -e run.sh", "ln -s target link": "test -L link", "touch x": "test -e x",
        "sed -i '/^$/d' notes.md": "test -s notes.md", "gzip app.log": "test -s app.log.gz",
        "tar -czf out.tgz logs": "tar -tzf out.tgz > /dev/null", "find src -name '*.pyc' -delete": "find src -name '*.pyc'",
        "git commit -am 'Fix it'": "git diff --cached --quiet", "git init repo": "test -d repo/.git",
        "cd /workspace && mv a b": "cd /workspace && test -e b",
    }
    for step, check in cases.items():
        assert named_check(step, "quiet") == check, step
        assert not tdata.is_write(check), check
    assert check_command(["sort a > out.txt", "wc -l a | tee n.txt"], "quiet") == "test -s out.txt && test -s n.txt"
    assert check_command(["rm -f x"], "quiet") is None
    assert check_command(["sort a > out.txt"], "none") is None  # none: look -> act -> submit
    assert [c.command for c in plan_calls(["sort a > out.txt"], "process", 6, checks="none")] == ["ls -la", "sort a > out.txt"]
    assert [c.command for c in plan_calls(["rm -f x"], "process", 6, checks="quiet")] == ["ls -la", "rm -f x"]
    assert plan_calls(["mv a b"], "process", 6, data="/srv", checks="quiet")[-1].command == "cd /srv && test -e b"

    task = make_task("out/s.txt", "alpha", ["mkdir -p out", "echo alpha | sort > out/s.txt"])
    kept, results = reference_trajectories([task], "bwrap", workers=1, shape="process", checks="quiet",
                                           harness_config=HarnessConfig(max_turns=6))
    assert [r.outcome for r in results] == ["passed"], results
    commands = [c["tool_calls"][0]["function"]["arguments"].get("command")
                for c in kept[0].messages if c["role"] == "assistant"]
    assert commands[-2:] == ["test -s out/s.txt", None]  # the check, then submit
    assert [x["content"] for x in kept[0].messages if x["role"] == "tool"][-1] == "[exit code 0]"  # printed nothing


def test_writes_and_looks() -> None:
    looks = ["ls -la", "cd /workspace && ls -la -- b", "git -C repo status", "cat a.txt | sort | uniq -c", "grep -rn x . | head", "git status", "find . -name '*.md'",
             "python3 -c 'print(1)'", "tar -tzf a.tgz", "wc -l < a.txt", "echo hi 2>/dev/null"]
    writes = ["echo a > b", "sort a >> b", "sed -i s/a/b/ f", "rm x", "mv a b", "git commit -m x",
              "find . -delete", "tar -xzf a.tgz", "python3 fix.py", "cat a | tee b", "FOO=1 touch x",
              "mkdir d", "chmod +x s", "cd d && rm x", "git -C repo commit -m x"]
    assert [c for c in looks if tdata.is_write(c)] == []
    assert [c for c in writes if not tdata.is_write(c)] == []


def test_quoted_text_is_data_but_a_quoted_program_may_write() -> None:
    """A pipe, a `;` or a `>` inside quotes is an argument: the command only looks. A program in
    quotes that writes by itself (awk's redirection or system(), python's open or os) is a write."""
    looks = ["grep -E 'error|warn' app.log", 'echo "a > b"', "grep 'x; rm y' notes.txt", "awk '$3 > 100' data.csv",
             'grep -c "tee" notes.txt', "python3 -c 'print(sum([1, 2]))'", "sed -n '/a|b/p' f.txt"]
    writes = ["awk '{print > \"out.txt\"}' data.csv", "awk '{ system(\"rm \" $1) }' list",
              "python3 -c \"import os; os.remove('x')\"", "python3 -c \"open('x', 'w').write('1')\"",
              "grep 'a|b' in.txt > out.txt", "sed -n 's/a/b/w out.txt' f", "find . -name '*.log' -fprint list"]
    assert [c for c in looks if tdata.is_write(c)] == []
    assert [c for c in writes if not tdata.is_write(c)] == []


# --- self-generated trajectories ---------------------------------------------------------------

def write_episodes(path: Path, rows: list[dict[str, Any]]) -> Path:
    from clawloop.core.trajectory import EPISODE_SCHEMA

    full = []
    for i, r in enumerate(rows):
        base = {f.name: None for f in EPISODE_SCHEMA}
        base.update(episode_id=f"e{i}", suite="s", skill="files", level=1, sample=i, policy_id="p",
                    iteration=0, outcome="passed" if r.get("passed") else "failed", termination="submit",
                    n_turns=1, n_format_errors=0, prompt_tokens=0, completion_tokens=0, duration_s=0.1)
        base.update(r)
        full.append(base)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(full, schema=EPISODE_SCHEMA), path)
    return path


def convo(task: Task, *commands: str) -> str:
    from clawloop.core.agent.tool_calls import assistant_message, tool_message

    msgs = initial_messages(task)
    for c in commands:
        msgs += [assistant_message(c), tool_message("[exit code 0]")]
    return json.dumps([*msgs, assistant_message(None)])


def test_self_trajectories_from_real_rollouts(tmp_path: Path) -> None:
    from scripted_policy import ScriptedPolicy

    from clawloop.core.agent.rollout import RolloutConfig, run_rollouts

    tasks = [make_task("a.txt", "alpha"), make_task("b.txt", "beta")]

    def reply(conv: list[dict[str, Any]]) -> str:
        n = sum(m["role"] == "assistant" for m in conv)
        if n == 0:  # solve a.txt, fail b.txt
            return call_text("bash", {"command": "echo alpha > a.txt"})
        return call_text("submit", {})

    run_rollouts(tasks, ScriptedPolicy(reply), RolloutConfig(k=3, backend="bwrap"), out_dir=tmp_path / "r",
                 progress=False)
    convs = tdata.load_self_trajectories([tmp_path / "r"])
    # three identical passing episodes of a.txt dedupe to one; b.txt failed
    assert len(convs) == 1 and convs[0].task_id == tasks[0].id
    assert convs[0].messages[2]["tool_calls"][0]["function"]["arguments"] == {"command": "echo alpha > a.txt"}


def test_self_trajectories_dedup_cap_and_order(tmp_path: Path) -> None:
    t = make_task("a.txt", "alpha")
    rows = [{"task_id": t.id, "passed": True, "messages": convo(t, "ls", "pwd", "echo alpha > a.txt")},
            {"task_id": t.id, "passed": True, "messages": convo(t, "echo alpha > a.txt")},
            {"task_id": t.id, "passed": True, "messages": convo(t, "echo alpha > a.txt")},
            {"task_id": t.id, "passed": True, "messages": convo(t, "ls", "echo alpha > a.txt")},
            {"task_id": t.id, "passed": False, "messages": convo(t, "rm -rf /")}]
    write_episodes(tmp_path / "run" / "episodes-00000.parquet", rows)
    convs = tdata.load_self_trajectories([tmp_path / "run"], max_per_task=2)
    assert [len(c.messages) for c in convs] == [5, 7]  # shortest first, duplicate dropped, cap 2
    assert all("rm -rf" not in json.dumps(c.messages) for c in convs)


def test_self_trajectories_by_process(tmp_path: Path) -> None:
    """order process keeps the passes that look first and check last; min_process drops one-liners."""
    t = make_task("a.txt", "alpha")
    one_liner = convo(t, "echo alpha > a.txt")
    looked = convo(t, "ls", "echo alpha > a.txt")
    careful = convo(t, "ls", "echo alpha > a.txt", "cat a.txt")
    rows = [{"task_id": t.id, "passed": True, "messages": m} for m in (one_liner, looked, careful)]
    write_episodes(tmp_path / "run" / "episodes-00000.parquet", rows)
    shortest = tdata.load_self_trajectories([tmp_path / "run"], max_per_task=1)
    assert [c.meta["process"] for c in shortest] == [0]
    best = tdata.load_self_trajectories([tmp_path / "run"], max_per_task=2, order="process")
    assert [c.meta["process"] for c in best] == [2, 1]
    assert [c.meta["process"] for c in tdata.load_self_trajectories([tmp_path / "run"], min_process=2)] == [2]
    with pytest.raises(ClawloopError, match="self_order"):
        tdata.load_self_trajectories([tmp_path / "run"], order="longest")


def test_self_trajectories_leave_out_passes_the_agent_did_not_end(tmp_path: Path) -> None:
    t, u = make_task("a.txt", "alpha"), make_task("b.txt", "beta")
    looped = convo(t, "echo alpha > a.txt", "echo alpha > a.txt", "echo alpha > a.txt")
    rows = [{"task_id": t.id, "passed": True, "messages": looped, "termination": "max_turns"},
            {"task_id": t.id, "passed": True, "messages": looped, "termination": "timeout"},
            {"task_id": u.id, "passed": True, "messages": convo(u, "echo beta > b.txt"), "termination": "submit"},
            {"task_id": u.id, "passed": True, "messages": convo(u, "echo beta>b.txt"), "termination": None}]
    write_episodes(tmp_path / "run" / "episodes-00000.parquet", rows)
    convs = tdata.load_self_trajectories([tmp_path / "run"])
    assert [c.task_id for c in convs] == [u.id, u.id]  # the looping passes of a.txt teach nothing


def test_self_trajectories_drop_a_checked_submit_and_its_note(tmp_path: Path) -> None:
    """A pass that went fail → submit → note → fix → submit trains as fail → fix → submit."""
    from clawloop.core.agent.harness import SUBMIT_CHECK, submit_check_note
    from clawloop.core.agent.tool_calls import assistant_message, tool_message

    t = make_task("a.txt", "alpha")
    msgs = [*initial_messages(t), assistant_message("cat b.txt"), tool_message("No such file\n[exit code 1]"),
            assistant_message(None), tool_message(submit_check_note(1), name=SUBMIT_CHECK),
            assistant_message("echo alpha > a.txt"), tool_message("[exit code 0]"), assistant_message(None)]
    write_episodes(tmp_path / "run" / "episodes-00000.parquet",
                   [{"task_id": t.id, "passed": True, "messages": json.dumps(msgs), "termination": "submit"}])
    (conv,) = tdata.load_self_trajectories([tmp_path / "run"])
    assert conv.messages == [*msgs[:4], *msgs[6:]]


def test_mix_fraction() -> None:
    t = make_task("a.txt", "alpha")
    ref = [tdata.Conversation(f"r{i}", json.loads(convo(t, f"echo r{i}")), "reference") for i in range(10)]
    own = [tdata.Conversation(f"s{i}", json.loads(convo(t, f"echo s{i}")), "self") for i in range(4)]
    assert len(tdata.mix(ref, own, None)) == 14
    half = tdata.mix(ref, own, 0.5, seed=1)
    assert sum(c.source == "self" for c in half) == 4 and sum(c.source == "reference" for c in half) == 4
    assert [c.source for c in tdata.mix(ref, own, 0.0)].count("self") == 0
    assert len(tdata.mix(ref, own, 1.0)) == 4
    fifth = tdata.mix(ref, own, 0.2)
    assert sum(c.source == "self" for c in fifth) == 2 and len(fifth) == 12
    assert tdata.mix(ref, own, 0.5, seed=1) == half  # deterministic


def test_dataset_keeps_messages_exact() -> None:
    t = make_task("a.txt", "alpha")
    conv = tdata.Conversation(t.id, json.loads(convo(t, "ls")), "reference")
    ds = tdata.to_dataset([conv])
    row = ds[0]
    assert row["messages"] == conv.messages  # no null-filled keys from Arrow struct inference
    assert row["messages"][-1]["tool_calls"][0]["function"]["arguments"] == {}
    assert json.loads(row["tools"]) == TOOLS
    with pytest.raises(ClawloopError, match="training set is empty"):
        tdata.to_dataset([])


@pytest.mark.parametrize(("rows", "match"), [
    (None, r"episodes.parquet: passed: column missing"),
    ([{"task_id": "x", "passed": True, "messages": "{not json"}], r"row 0: messages: not valid JSON"),
    ([{"task_id": "x", "passed": True, "messages": "[]"}], r"row 0: messages: expected a non-empty"),
    ([{"task_id": "x", "passed": True, "messages": '[{"role": "user", "content": "hi"}]'}],
     r"row 0: messages: no assistant turn"),
])
def test_bad_trajectory_files(tmp_path: Path, rows: list[dict[str, Any]] | None, match: str) -> None:
    f = tmp_path / "episodes.parquet"
    if rows is None:
        pq.write_table(pa.table({"task_id": ["x"], "messages": ["[]"]}), f)
    else:
        write_episodes(f, rows)
    with pytest.raises(ClawloopError, match=match):
        tdata.load_self_trajectories([f])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ClawloopError, match="no episodes"):
        tdata.load_self_trajectories([tmp_path / "empty"])
    (tmp_path / "junk.parquet").write_text("nope")
    with pytest.raises(ClawloopError, match="not a Parquet file"):
        tdata.load_self_trajectories([tmp_path / "junk.parquet"])


def test_a_process_replay_may_drop_the_steps_that_preview_a_later_one() -> None:
    from clawloop.phases.train.reference import drop_previews, plan_calls

    steps = ["find d -type f -empty", "find d -type f -empty -delete"]
    assert [c.command for c in plan_calls(steps, "process", 8)] == ["ls -la", *steps, "find d -type f -empty"]
    assert [c.command for c in plan_calls(steps, "process", 8, previews=False)] == [
        "ls -la", "find d -type f -empty -delete", "find d -type f -empty"]
    assert drop_previews(["find d -mtime +7 | sort", "find d -mtime +7 -delete"]) == ["find d -mtime +7 -delete"]
    # a read that informs the change, a listing of something else, and a last step stay
    kept = ["cat run.sh", "sed -i 's/x/y/' run.sh", "ls d", "for f in d/*.a; do mv \"$f\" \"${f%.a}.b\"; done",
            "find d -name '*.b'"]
    assert drop_previews(kept) == kept


def test_a_process_replay_may_restate_the_instruction_before_its_first_act() -> None:
    """`reference_thoughts: restate`: the first act's thought is the instruction on one line (long ones
    cut at a sentence), ahead of the answer's thought; the look, the later acts and the check are as
    before, and a replayed episode still passes with the restatement in the trained reply."""
    from clawloop.phases.train.reference import (
        ANSWER_THOUGHT,
        CHECK_THOUGHT,
        INSPECT,
        plan_calls,
        restatement,
    )

    assert restatement("Remove the\n empty files  under d.") == "The task: Remove the empty files under d."
    long = "Sort a.txt into b.txt. " * 20
    assert restatement(long).endswith("b.txt.") and len(restatement(long)) <= len("The task: ") + 240
    assert restatement("x" * 300).endswith(" ...")
    steps = ["mkdir -p out", "sort a > out/b"]
    plain = plan_calls(steps, "process", 8)
    told = plan_calls(steps, "process", 8, instruction="Sort a into out/b.")
    assert [c.command for c in told] == [c.command for c in plain]
    assert [c.thought for c in told] == [INSPECT[0], "The task: Sort a into out/b.", "", CHECK_THOUGHT]
    answer = plan_calls(["wc -l < a"], "process", 8, answer=True, instruction="How many lines has a?")
    assert answer[-1].thought == f"The task: How many lines has a? {ANSWER_THOUGHT}"
    assert plan_calls(steps, "plain", 8, instruction="Sort a.")[0].thought == ""  # plain replays have no thoughts
    # a planned mistake is the first act: the restatement goes with it, outside the loss
    wrong, fix = plan_calls(["cd /w && sort a.txt"], "process", 8, data="/w", mistake=True, instruction="Sort a.txt.")[1:3]
    assert (wrong.thought, wrong.trained) == ("The task: Sort a.txt.", False) and fix.trained

    task = make_task("a.txt", "alpha")
    kept, results = reference_trajectories([task], "bwrap", workers=1, shape="process", restate=True)
    assert [r.outcome for r in results] == ["passed"], results
    acts = [m for m in kept[0].messages if m["role"] == "assistant"]
    assert acts[1]["content"].startswith("The task: Write alpha into a.txt.")
    assert acts[1]["tool_calls"][0]["function"]["arguments"]["command"] == "echo alpha > a.txt"
