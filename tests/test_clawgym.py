"""ClawGym-Bench adapter: loading, the reward.sh wrapper, and the fixture suite on bwrap."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clawloop.core.agent.oracle import run_episode
from clawloop.core.tasks.clawgym import WORKSPACE, load_clawgym_task, reward_error
from clawloop.core.tasks.formats import load_suite_any
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "benchmarks" / "fixtures" / "clawgym"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def make_task(root: Path, name: str, reward_sh: str | None, entry: dict | None = None,
              inputs: dict[str, str] | None = None, solve: str | None = None) -> Path:
    d = root / name
    (d / "reward").mkdir(parents=True)
    entry = entry if entry is not None else {"task_id": name, "user_query": f"do {name}", "metadata": {}}
    (d / "data_entry.json").write_text(json.dumps(entry))
    if reward_sh is not None:
        (d / "reward" / "reward.sh").write_text(reward_sh)
    for rel, text in (inputs or {}).items():
        p = d / "input_files" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    if solve is not None:
        (d / "solution").mkdir()
        (d / "solution" / "solve.sh").write_text(solve)
    return d


def test_load_maps_entry_files_and_reward() -> None:
    t = load_clawgym_task(SUITE / "sales-total", source="clawgym")
    assert t.instruction.startswith("Read input/sales.csv")
    assert set(t.files) == {f"{WORKSPACE}/input/sales.csv"}
    assert t.workdir == WORKSPACE
    assert {"reward/reward.sh", "reward/check.py", "test.sh"} <= set(t.verifier.files)
    assert t.verifier.entry == "test.sh"
    assert t.solution is not None and t.solution.steps == ["bash /solution/solve.sh"]
    assert t.skill == "data" and t.source == "clawgym" and "clawgym" in t.tags
    rec = t.metadata["clawgym"]
    assert rec["name"] == "sales-total" and rec["data_entry"]["input_mount_dir"] == WORKSPACE
    # no input files and no input_mount_dir: the default workspace, empty category → general
    g = load_clawgym_task(SUITE / "greet-script")
    assert g.files == {} and g.skill == "general"


def test_custom_mount_dir(tmp_path: Path) -> None:
    d = make_task(tmp_path, "m", "echo 1\n", {"task_id": "m", "user_query": "q", "metadata": {},
                                               "input_mount_dir": "/srv/data/"}, {"a/b.txt": "x"})
    t = load_clawgym_task(d)
    assert set(t.files) == {"/srv/data/a/b.txt"}
    assert t.verifier.files["test.sh"].content == load_clawgym_task(SUITE / "greet-script").verifier.files["test.sh"].content


@pytest.mark.parametrize(("entry", "needle"), [
    ({"task_id": "x", "metadata": {}}, "data_entry.json: user_query: missing"),
    ({"task_id": "x", "user_query": "  ", "metadata": {}}, "user_query: empty"),
    ({"task_id": 3, "user_query": "q"}, "task_id: expected a string"),
    ({"user_query": "q", "metadata": []}, "metadata: expected an object"),
    ({"user_query": "q", "input_mount_dir": "rel/dir"}, "input_mount_dir: must be an absolute path"),
])
def test_bad_entries_name_file_and_field(tmp_path: Path, entry: dict, needle: str) -> None:
    d = make_task(tmp_path, "bad", "echo 1\n", entry)
    with pytest.raises(ClawloopError, match=needle.replace("(", r"\(")) as e:
        load_clawgym_task(d)
    assert str(d) in str(e.value)


def test_missing_reward_sh_and_mount(tmp_path: Path) -> None:
    with pytest.raises(ClawloopError, match=r"reward/reward.sh: file not found"):
        load_clawgym_task(make_task(tmp_path, "a", None))
    d = make_task(tmp_path, "b", "echo 1\n", {"user_query": "q"}, {"x.txt": "1"})
    with pytest.raises(ClawloopError, match="input_mount_dir: missing but input_files/ is not empty"):
        load_clawgym_task(d)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "data_entry.json").write_text("{not json")
    with pytest.raises(ClawloopError, match="data_entry.json: not valid JSON"):
        load_clawgym_task(tmp_path / "c")


def test_suite_keeps_going_past_a_bad_task(tmp_path: Path) -> None:
    shutil.copytree(SUITE / "sales-total", tmp_path / "sales-total")
    make_task(tmp_path, "no-query", "echo 1\n", {"task_id": "no-query", "metadata": {}})
    suite = load_suite_any(tmp_path)
    by = {i.name: i for i in suite.items}
    assert by["sales-total"].task is not None
    assert by["no-query"].task is None and "no-query/data_entry.json: user_query: missing" in by["no-query"].error


def test_reward_error_reads_the_wrapper_mark() -> None:
    assert reward_error("x\nclawloop-reward-error: reward.sh printed no float (last line: 'ok')\n") == \
        "reward.sh printed no float (last line: 'ok')"
    assert reward_error("0.5\n") is None


@needs_bwrap
@pytest.mark.parametrize(("script", "outcome", "reward", "reason"), [
    ("echo noise\necho 0.5\n", "failed", 0.5, None),
    ("printf '0.25\\n\\n  \\n'\n", "failed", 0.25, None),
    ("echo 1\n", "passed", 1.0, None),
    ("echo all good\n", "error", None, "reward.sh printed no float (last line: 'allgood')"),
    ("true\n", "error", None, "reward.sh printed no float (last line: '')"),
    ("echo 1.5\n", "error", None, "reward.sh printed 1.5, outside [0, 1]"),
    ("echo 1\nexit 3\n", "error", None, "reward.sh exited with status 3"),
])
def test_wrapper_parses_last_line(tmp_path: Path, script: str, outcome: str, reward: float | None,
                                  reason: str | None) -> None:
    t = load_clawgym_task(make_task(tmp_path, "w", "#!/bin/bash\n" + script))
    rec = run_episode(t, "noop", suite="s", name="w")
    assert rec.benchmark == "clawgym"
    assert (rec.outcome, rec.reward, rec.reason) == (outcome, reward, reason)


@needs_bwrap
def test_reward_sees_workspace_and_payload(tmp_path: Path) -> None:
    reward = ("#!/bin/bash\nset -e\ntest -f /root/.openclaw/workspace/reward/reward.sh\n"
              "python3 -c 'import json,os; d=json.load(open(os.environ[\"OPENCLAW_REWARD_PAYLOAD\"])); "
              "print(1.0 if d[\"task_id\"] == \"p\" and d[\"final_message\"] == \"\" else 0.0)'\n")
    d = make_task(tmp_path, "p", reward, {"task_id": "p", "user_query": "q",
                                          "input_mount_dir": WORKSPACE}, {"in.txt": "x"})
    rec = run_episode(load_clawgym_task(d), "noop")
    assert rec.outcome == "passed", rec.reason or rec.verifier_output


@needs_bwrap
def test_fixture_suite_noop_fails() -> None:  # oracle and noop over the suite: tests/test_formats.py (CLI)
    suite = load_suite_any(SUITE, "clawgym")
    assert len(suite.items) == 4 and all(i.task is not None for i in suite.items)
    item = next(i for i in suite.items if i.name == "event-summary")
    assert item.task is not None
    bad = run_episode(item.task, "noop", suite=suite.name, name=item.name)
    assert (bad.outcome, bad.reward) == ("failed", 0.0)
