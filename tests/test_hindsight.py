"""Grounded synthesis, hindsight: state diff rules, the state checker, relabeling in bwrap, the whole
routine with a scripted policy, and agent-free validation of what it makes."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from scripted_policy import ScriptedPolicy

from clawloop.config.synthesis import HindsightParams
from clawloop.core.tasks.task import FileSpec, Task, Verifier
from clawloop.phases.synthesize.grounded import state_diff as sd
from clawloop.phases.synthesize.grounded import state_probe
from clawloop.phases.synthesize.grounded.attempts import Attempts
from clawloop.phases.synthesize.grounded.hindsight import (
    Rejected,
    exploration_task,
    hindsight_tasks,
    relabel,
)

SHA_A, SHA_B = "a" * 64, "b" * 64


def bash(cmd: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": cmd}}) + "\n</tool_call>"


SUBMIT = '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'


def backend() -> str:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    return "bwrap"


def seed_task(**files: str) -> Task:
    files = files or {"app.log": "INFO start\nERROR disk full\nINFO ok\nERROR net down\n",
                      "names.txt": "bob\nalice\ncarol\nalice\n", "run.sh": "#!/bin/bash\necho hi\n",
                      "old/tmp.txt": "junk\n"}
    return Task(instruction="seed", files={f"/workspace/{k}": FileSpec(content=v) for k, v in files.items()},
                verifier=Verifier(files={"test.sh": FileSpec(content="exit 0\n")}), skill="files")


# ------------------------------------------------------------------------- diff rules (pure)
def f(sha: str, mode: int = 0o644) -> dict[str, Any]:
    return {"t": "f", "mode": mode, "size": 1, "sha256": sha}


def test_diff_kinds_and_essential_changes() -> None:
    before = {"a": f(SHA_A), "b": f(SHA_A), "x": f(SHA_A, 0o644), "d": {"t": "d", "mode": 0o755},
              "d/in": f(SHA_B), "t": f(SHA_B)}
    after = {"a": f(SHA_B), "x": f(SHA_A, 0o755), "new": {"t": "d", "mode": 0o755}, "new/f": f(SHA_A),
             "ln": {"t": "l", "target": "a", "real": "/workspace/a"}, "t": {"t": "d", "mode": 0o755}}
    ch = {c.path: c.kind for c in sd.diff(before, after)}
    assert ch == {"a": "modified", "b": "deleted", "x": "mode", "d": "deleted", "d/in": "deleted",
                  "new": "created", "new/f": "created", "ln": "created", "t": "retyped"}
    ess = {c.path for c in sd.essential(sd.diff(before, after))}
    assert "d/in" not in ess and "new" not in ess and {"d", "new/f", "b"} <= ess  # implied ones dropped
    assert sd.diff(before, dict(before)) == []


def test_expected_checks_rules() -> None:
    before = {"keep.txt": f(SHA_A), "gone.txt": f(SHA_A), "m.txt": f(SHA_A), "x.sh": f(SHA_B)}
    after = {"keep.txt": f(SHA_A), "m.txt": f(SHA_B), "x.sh": f(SHA_B, 0o755), "exe": f(SHA_A, 0o700),
             "plain": f(SHA_A), "ln": {"t": "l", "target": "keep.txt", "real": "/workspace/keep.txt"},
             "dir": {"t": "d", "mode": 0o750}}
    checks = {c["path"]: c for c in sd.expected_checks(sd.diff(before, after), before, "/workspace")}
    assert checks["/workspace/gone.txt"] == {"t": "absent", "path": "/workspace/gone.txt"}
    assert checks["/workspace/m.txt"] == {"t": "file", "path": "/workspace/m.txt", "sha256": SHA_B}
    assert checks["/workspace/x.sh"] == {"t": "mode", "path": "/workspace/x.sh", "mode": 0o755}
    assert checks["/workspace/exe"]["mode"] == 0o700 and "mode" not in checks["/workspace/plain"]
    assert checks["/workspace/ln"]["resolves"] == "/workspace/keep.txt"
    assert checks["/workspace/dir"] == {"t": "dir", "path": "/workspace/dir", "mode": 0o750}
    assert checks["/workspace/keep.txt"]["keep"] is True
    no_keep = sd.expected_checks(sd.diff(before, after), before, "/workspace", keep_untouched=False)
    assert not any(c.get("keep") for c in no_keep)


def test_probe_snapshot_and_checks_locally(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hi\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.sh").write_text("echo\n")
    (tmp_path / "sub" / "x.sh").chmod(0o755)
    (tmp_path / "ln").symlink_to("a.txt")
    snap = state_probe.snapshot(str(tmp_path))["entries"]
    assert snap["a.txt"]["t"] == "f" and snap["sub"]["t"] == "d" and snap["sub/x.sh"]["mode"] == 0o755
    assert snap["ln"] == {"t": "l", "target": "a.txt", "real": str(tmp_path / "a.txt")}
    checks = sd.expected_checks(sd.diff({}, snap), {}, str(tmp_path))
    spec = tmp_path.parent / "expected.json"
    spec.write_text(sd.expected_json(checks, str(tmp_path)))
    assert state_probe.check(str(spec)) == 0
    (tmp_path / "a.txt").write_text("changed\n")
    assert state_probe.check(str(spec)) == 1
    assert state_probe.check_one({"t": "absent", "path": str(tmp_path / "ln")}) is not None


# ----------------------------------------------------------------------- relabel in bwrap
def test_relabel_makes_valid_tasks_and_minimizes() -> None:
    from clawloop.phases.validate.agent_free import validate_pool

    be, parent = backend(), seed_task()
    cases = {
        "grep": ["ls -la", "grep ERROR app.log > errors.txt", "cat errors.txt"],
        "sort+chmod+rm": ["sort -u names.txt > u.txt", "chmod +x run.sh", "rm -r old"],
        "copy+link": ["mkdir backup && cp app.log backup/", "ln -s app.log current.log"],
        "sed": ["sed -i 's/INFO/NOTE/g' app.log"],
        "move": ["mv names.txt people.txt", "echo done"],
    }
    tasks = {k: relabel(parent, v, backend=be, rng=random.Random(0), iteration=2, seed=7) for k, v in cases.items()}
    t = tasks["grep"]
    assert t.solution is not None and t.solution.steps == ["grep ERROR app.log > errors.txt"]
    assert "errors.txt" in t.instruction and "'ERROR'" in t.instruction and t.skill == "text_search"
    assert t.provenance.routine == "hindsight" and t.provenance.parent_id == parent.id
    assert t.provenance.iteration == 2 and t.files == parent.files
    assert set(t.verifier.files) == {"test.sh", "check_state.py", "expected.json"}
    assert tasks["move"].solution.steps == ["mv names.txt people.txt"]
    assert "Rename names.txt to people.txt" in tasks["move"].instruction or "Move" in tasks["move"].instruction
    assert "NOTE" in tasks["sed"].instruction and tasks["sed"].skill == "stream_edit"
    assert "executable" in tasks["sort+chmod+rm"].instruction or "execute" in tasks["sort+chmod+rm"].instruction
    kept, report = validate_pool(list(tasks.values()), backend=be, jobs=2)
    assert report["rejected"] == {} and len(kept) == len(cases)


def test_relabel_rejections() -> None:
    be, parent = backend(), seed_task()
    with pytest.raises(Rejected) as e:
        relabel(parent, ["ls", "cat app.log"], backend=be)
    assert e.value.reason == "no_change"
    with pytest.raises(Rejected) as e:
        relabel(parent, [], backend=be)
    assert e.value.reason == "no_commands"
    with pytest.raises(Rejected) as e:
        relabel(parent, ["head -c 3000 /dev/urandom > blob.bin"], backend=be)
    assert e.value.reason in ("undescribable", "nondeterministic")
    with pytest.raises(Rejected) as e:
        relabel(parent, ["date +%s%N > stamp.txt"], backend=be)
    assert e.value.reason == "nondeterministic"
    with pytest.raises(Rejected) as e:
        relabel(parent, ["for i in $(seq 20); do echo $i > f$i.txt; done"], backend=be,
                params=HindsightParams(max_changes=8))
    assert e.value.reason == "too_many_changes"


def test_volatile_seeded_files_are_not_kept() -> None:
    from clawloop.phases.validate.agent_free import validate_pool

    be = backend()
    parent = seed_task().model_copy(update={"setup": ["date +%s%N > stamp.txt"]})
    task = relabel(parent, ["echo hi > hello.txt"], backend=be)
    spec = json.loads(task.verifier.files["expected.json"].content)
    paths = {c["path"] for c in spec["checks"]}
    assert "/workspace/hello.txt" in paths and "/workspace/stamp.txt" not in paths and "/workspace/app.log" in paths
    kept, report = validate_pool([task], backend=be, jobs=1)
    assert len(kept) == 1, report
    with pytest.raises(Rejected) as e:
        relabel(parent, ["cp stamp.txt copy.txt"], backend=be)
    assert e.value.reason == "nondeterministic"


def test_time_dependent_change_fails_validation() -> None:
    from clawloop.phases.validate.agent_free import validate_pool

    be = backend()
    task = relabel(seed_task(), ["date +%s%N > stamp.txt"], backend=be, params=HindsightParams(check_replay=False))
    kept, report = validate_pool([task], backend=be, jobs=1)
    assert kept == [] and set(report["rejected"]) <= {"oracle_fails", "nondeterministic"}


# ------------------------------------------------------------------ the routine, scripted
def explorer(conv: list[dict[str, Any]]) -> str:
    """A scripted explorer: looks, then acts on the first file the prompt lists."""
    n = sum(1 for m in conv if m["role"] == "assistant")
    listed = [line.strip().split(" (")[0] for line in conv[1]["content"].splitlines() if line.startswith("  ")]
    first = listed[0] if listed else "nothing"
    plan = [bash("ls -la"), bash(f"cp {first} copy_of_first.txt" if "app.log" not in first else "ls"), SUBMIT]
    return plan[min(n, len(plan) - 1)]


def test_hindsight_routine_with_scripted_policy(tmp_path: Path) -> None:
    from clawloop.phases.validate.agent_free import validate_pool

    be = backend()
    parents = [seed_task(), seed_task(**{"notes.txt": "a\nb\n"}), seed_task(**{"data.csv": "x,y\n1,2\n"})]
    task = exploration_task(parents[1])
    assert "notes.txt" in task.instruction and task.solution is None
    tasks, stats = hindsight_tasks(ScriptedPolicy(explorer), Attempts(n=3, iteration=1, backend=be, out_dir=tmp_path / "traj"),
                                   parents=parents)
    assert stats["attempts"] == 3 and stats["produced"] == 2 and stats["rejected"] == {"no_change": 1}
    assert all(t.solution and t.solution.steps[0].startswith("cp ") for t in tasks)
    assert list((tmp_path / "traj").glob("episodes-*.parquet"))
    kept, report = validate_pool(tasks, backend=be, jobs=2)
    assert len(kept) == 2, report


def test_synthesize_grounded_hindsight_from_procedural_seeds() -> None:
    from clawloop.phases.synthesize.grounded.routines import synthesize_grounded

    be = backend()
    policy = ScriptedPolicy([bash("touch marker.txt"), SUBMIT])
    tasks, stats = synthesize_grounded("hindsight", policy, Attempts(n=3, seed=1, iteration=4, backend=be),
                                       HindsightParams(skills=["files"]))
    assert stats["attempts"] == 3 and stats["routine"] == "hindsight"
    assert stats["produced"] + sum(stats["rejected"].values()) == 3
    for t in tasks:
        assert t.provenance.parent_id and t.provenance.iteration == 4 and "marker.txt" in t.instruction


def test_model_phrased_instruction_is_checked() -> None:
    be, parent = backend(), seed_task()
    good = "Please put the lines of app.log that mention 'ERROR' into errors.txt, nothing else."
    params = HindsightParams(instruction="model")
    t = relabel(parent, ["grep ERROR app.log > errors.txt"], backend=be, params=params, policy=ScriptedPolicy([good]))
    assert t.instruction == good
    t = relabel(parent, ["grep ERROR app.log > errors.txt"], backend=be, params=params,
                policy=ScriptedPolicy(["Collect the errors somewhere."]))  # drops the paths: template kept
    assert "errors.txt" in t.instruction and "app.log" in t.instruction and t.instruction != good
