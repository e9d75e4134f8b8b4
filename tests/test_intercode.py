"""InterCode-Bash adapter (#35): loading an export, the reward terms, the gold replay on bwrap.

The fixture tests/fixtures/intercode-mini is hand-written in the benchmark's layout (a garden
file system of our own, our own queries and gold commands): nothing of the benchmark is here.
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from clawloop.core.agent.oracle import run_episode
from clawloop.core.tasks import intercode as ic
from clawloop.core.tasks import intercode_reward as icr
from clawloop.core.tasks.adapters import adapter_for
from clawloop.core.tasks.formats import detect_format, load_suite_any, score_fields
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "intercode-mini"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One snapshot cache for the module (each file system is built once)."""
    d = tmp_path_factory.mktemp("intercode-cache")
    old = os.environ.get(ic.CACHE_ENV)
    os.environ[ic.CACHE_ENV] = str(d)
    yield d
    if old is None:
        os.environ.pop(ic.CACHE_ENV, None)
    else:
        os.environ[ic.CACHE_ENV] = old


@pytest.fixture(scope="module")
def tasks(backend: str) -> dict[str, ic.Task]:
    return {t.metadata[ic.KEY]["name"]: t for t in ic.load_intercode(FIX)}


# ---------------------------------------------------------------------------- reward terms
def test_tfidf_matches_hand_computation() -> None:
    # vocabulary {hello, world, there}; idf(hello) = ln(3/3)+1 = 1, idf(world) = idf(there) = ln(3/2)+1
    w = math.log(1.5) + 1
    assert icr.tfidf_similarity("Hello world", "hello there") == pytest.approx(1 / (1 + w * w))
    assert icr.tfidf_similarity("a b c", "a b c") == 1.0  # one-letter tokens only: sklearn's ValueError, equal
    assert icr.tfidf_similarity("!", "?") == 0.0
    assert icr.tfidf_similarity("", "") == 1.0
    assert icr.tfidf_similarity("some text", "") == 0.0
    assert icr.tfidf_similarity("x y", None) == 0.0
    assert icr.tfidf_similarity("Done done", "done") == pytest.approx(1.0)


def test_git_status_and_parse_quirks() -> None:
    base = {"g": ["d"], "g/a.txt": ["f", "1", False], "g/b c.txt": ["f", "2", False], "g/run": ["f", "3", True],
            "g/l": ["l", "a.txt", ["missing"]]}
    cur = {"g": ["d"], "g/a.txt": ["f", "9", False], "g/run": ["f", "3", False], "g/l": ["f", "x", False],
           "g/new": ["d"], "g/new/f": ["f", "4", False], "g/empty": ["d"], "g/n.txt": ["f", "5", False],
           "top.txt": ["f", "6", False]}
    status = icr.git_status(base, cur)
    assert status == (' M g/a.txt\n D "g/b c.txt"\n T g/l\n M g/run\n?? g/n.txt\n?? g/new/\n?? top.txt\n')
    pairs = icr.parse_status(status)  # the quoted space splits: InterCode pairs the halves wrongly
    assert pairs[:2] == [("g/a.txt", "M"), ('"g/b', "D")]
    assert pairs[2] == ("T", 'c.txt"') and len(pairs) == 7  # 15 tokens: the last one is dropped
    assert icr.quote_path("a\rb") == '"a\\rb"' and icr.quote_path("é") == '"\\303\\251"'
    assert icr.quote_path('q"') == '"q\\""' and icr.quote_path("plain/x.txt") == "plain/x.txt"


def test_reward_terms_on_hand_computed_cases() -> None:
    base = {"g": ["d"], "g/a.txt": ["f", "1", False]}
    gold = {**base, "g/new.txt": ["f", "2", False], "g/dir": ["d"], "g/dir/x": ["f", "3", False]}
    # the oracle: same files, same output
    r = icr.reward(base, gold, gold, "out put", "out put")
    assert (r["file_diff"], r["file_changes"], r["answer_similarity"], r["reward"]) == (0.33, 0.33, 0.33, 1.0)
    # nothing done: 2 missed changes (erf(2) ~ 0.9953 -> 0.0), no common change (0.33), output unlike
    r = icr.reward(base, base, gold, "the query", "out put")
    assert (r["file_diff"], r["file_changes"], r["answer_similarity"]) == (0.0, 0.33, 0.0)
    assert r["reward"] == pytest.approx(0.34) and sorted(map(tuple, r["diff_miss"])) == [("g/dir/", "??"),
                                                                                         ("g/new.txt", "??")]
    # one miss: round(0.33 * (1 - erf(1)), 2) = 0.05; a wrong new file counts (it has a "."), a
    # wrong new dir never does (InterCode's md5deep is missing: equal errors)
    wrong = {**base, "g/new.txt": ["f", "BAD", False], "g/dir": ["d"], "g/dir/x": ["f", "BAD", False]}
    r = icr.reward(base, wrong, gold, "out put", "out put")
    assert (r["file_diff"], r["file_changes"], r["diff_same"]) == (0.33, 0.17, {"correct": 1, "total": 2})
    r = icr.reward(base, {**base, "g/new.txt": ["f", "2", False]}, gold, "", "")
    assert (r["file_diff"], r["file_changes"], r["answer_similarity"]) == (0.05, 0.33, 0.33)
    assert r["reward"] == pytest.approx(0.72)


def test_a_wrong_symlink_target_scores_full_faithfully_and_not_strictly() -> None:
    """InterCode checks a dot-less new path with md5deep, missing from its image: a symlink to the
    wrong file (and a dot-less file with the wrong bytes) counts as equal, so the faithful reward
    is full; the strict score, beside it, compares targets and content."""
    base = {"d": ["d"], "d/a.txt": ["f", "1", False], "d/b.txt": ["f", "2", False]}
    gold = {**base, "d/link": ["l", "/d/a.txt", ["f", "1"]], "d/notes": ["f", "3", False]}
    wrong = {**base, "d/link": ["l", "/d/b.txt", ["f", "2"]], "d/notes": ["f", "BAD", False]}
    r = icr.reward(base, wrong, gold, "ok", "ok")
    assert (r["reward"], r["file_changes"], r["diff_same"]) == (1.0, 0.33, {"correct": 2, "total": 2})
    assert (r["strict_reward"], r["strict_file_changes"]) == (pytest.approx(0.67), 0.0)
    assert r["strict_diff_same"] == {"correct": 0, "total": 2}
    right = icr.reward(base, gold, gold, "ok", "ok")  # the gold itself: full on both
    assert right["reward"] == right["strict_reward"] == 1.0
    # a new dir and a quoted name are compared by what they hold
    g2 = {**base, "d/new": ["d"], "d/new/x": ["f", "4", False], "d/é": ["l", "a.txt", ["f", "1"]]}
    w2 = {**base, "d/new": ["d"], "d/new/x": ["f", "5", False], "d/é": ["l", "b.txt", ["f", "2"]]}
    r2 = icr.reward(base, w2, g2, "ok", "ok")
    assert r2["reward"] == 1.0 and r2["strict_diff_same"] == {"correct": 0, "total": 2}
    assert icr.unquote_path(icr.quote_path("d/é \"q\"\t")) == "d/é \"q\"\t"


def test_the_summary_labels_the_strict_score_beside_intercodes() -> None:
    from clawloop.core.trajectory import EpisodeRecord

    def rec(reward: float, strict: float | None) -> EpisodeRecord:
        return EpisodeRecord(task_id="t", name="t", suite="s", skill="k", level=1, agent="a",
                             outcome="passed" if reward >= 1 else "failed", reward=reward, benchmark="intercode",
                             scores={"file_diff": 0.33} if strict is None else {"strict_reward": strict})

    assert score_fields([rec(1.0, 0.67), rec(1.0, 1.0), rec(0.5, 0.5)]) == {
        "mean_score": 0.8333, "full_score_rate": 0.6667, "strict_mean_score": 0.7233,
        "strict_full_score_rate": 0.3333}
    assert score_fields([rec(1.0, None)]) == {"mean_score": 1.0, "full_score_rate": 1.0}  # older records


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_status_emulation_matches_git(tmp_path: Path) -> None:
    wt, gd = tmp_path / "wt", tmp_path / "git"
    (wt / "g" / "sub").mkdir(parents=True)
    for rel, text in {"g/a.txt": "a", "g/b c.txt": "b", "g/sub/run.sh": "r", "g/k\u00e9.txt": "k",
                      "top": "t", "g/bin/x": "ignored"}.items():
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt / rel).write_text(text)
    os.symlink("a.txt", wt / "g" / "link")
    git = ["git", f"--git-dir={gd}", f"--work-tree={wt}", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", "--bare", str(gd)], check=True)
    (gd / "info").mkdir(exist_ok=True)
    (gd / "info" / "exclude").write_text("\n".join(sorted(icr.IGNORED)) + "\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    baseline = icr.walk(str(wt))["entries"]
    (wt / "g" / "a.txt").write_text("changed")
    (wt / "g" / "b c.txt").unlink()
    (wt / "g" / "sub" / "run.sh").chmod(0o755)
    (wt / "g" / "link").unlink()
    (wt / "g" / "link").write_text("now a file")
    (wt / "new" / "deep").mkdir(parents=True)
    (wt / "new" / "deep" / "f").write_text("n")
    (wt / "empty" / "dir").mkdir(parents=True)
    (wt / "g" / "sub" / "n\rq.txt").write_text("q")
    (wt / "g" / "var").mkdir()
    (wt / "g" / "var" / "x").write_text("ignored at depth")
    got = icr.git_status(baseline, icr.walk(str(wt))["entries"])
    want = subprocess.run([*git, "-c", "core.quotePath=true", "status", "--short"], check=True,
                          capture_output=True, text=True, cwd=wt).stdout
    assert got == want


# ---------------------------------------------------------------------------------- loading
@needs_bwrap
def test_load_fixture(tasks: dict[str, ic.Task], cache: Path) -> None:
    assert detect_format(FIX) == "intercode"
    assert sorted(tasks) == [f"fs1-{i:02d}" for i in range(9)] + ["fs2-00", "fs2-01"]
    t = tasks["fs1-01"]
    assert t.instruction.startswith("Write the unique plants")
    assert t.workdir == "/" and t.env == {"file_system_version": "1", "script": "setup_nl2b_fs_1.sh"}
    assert t.solution is not None and t.solution.steps == [ic.gold_command(
        "sort -u /garden/beds/north/plants.txt > /garden/beds/north/harvest.txt")]
    assert (t.limits.max_turns, t.limits.command_timeout_s) == (10, 10.0)
    assert t.skill == "intercode-fs1" and adapter_for(t).name == "intercode"
    assert t.metadata[ic.KEY]["roots"] == ["garden", "setup_nl2b_fs_1.sh", "welcome.txt"]
    assert ic.task_spec(tasks["fs1-08"])["gold"] == "echo done > /done.txt;cat /done.txt"  # a list joined
    assert tasks["fs2-00"].metadata[ic.KEY]["roots"] == ["setup_nl2b_fs_2.sh"]  # the script alone, at / as in the image
    assert len(list(cache.glob("*.tar.gz"))) == 2
    suite = load_suite_any(FIX)  # auto-detected, cached: the same tasks
    assert [i.task.id for i in suite.items if i.task] == [t.id for t in tasks.values()]


@needs_bwrap
def test_snapshot_is_cached_by_content(tasks: dict[str, ic.Task], monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: object, **k: object) -> None:
        raise AssertionError("rebuilt")

    monkeypatch.setattr("clawloop.core.tasks.intercode_fs.build_snapshot", boom)
    again = {t.metadata[ic.KEY]["name"]: t for t in ic.load_intercode(FIX)}
    assert again["fs1-00"].id == tasks["fs1-00"].id
    key = ic.snapshot_key((FIX / "docker/bash_scripts/setup_nl2b_fs_1.sh").read_bytes(), 1)
    assert tasks["fs1-00"].metadata[ic.KEY]["snapshot"] == key


@needs_bwrap
def test_a_rebuild_gives_the_same_bytes_and_ids(tasks: dict[str, ic.Task], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """fs 1 of the fixture makes backup.tar.gz with `tar -czf` as InterCode's fs 2 and 3 do: its
    member mtimes and gzip header would carry the build's clock, and with them every task's id
    (the suite's 50-of-200 sample is by id), so a fresh cache on another machine, or a second
    later, would evaluate other tasks. Built again in an empty cache: the same archive."""
    import time

    time.sleep(1.1)  # the clock has moved on since the module's build
    monkeypatch.setenv(ic.CACHE_ENV, str(tmp_path / "fresh"))
    again = {t.metadata[ic.KEY]["name"]: t for t in ic.load_intercode(FIX)}
    assert {n: t.id for n, t in again.items()} == {n: t.id for n, t in tasks.items()}
    with tarfile.open(fileobj=io.BytesIO(tasks["fs1-00"].files[ic.SNAPSHOT].data())) as outer:
        assert outer.getmember("garden/shed/backup.tar.gz").mtime == ic.SENTINEL
        backup = outer.extractfile("garden/shed/backup.tar.gz").read()
    assert backup[4:8] == bytes(4)  # gzip's header mtime
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(backup))) as tar:
        inner = tar.getmembers()
    assert [m.name for m in inner] == sorted(m.name for m in inner)  # not the build's readdir order
    assert {m.mtime for m in inner} == {ic.SENTINEL}


def _export(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "export"
    shutil.copytree(FIX, root)
    for rel, text in files.items():
        (root / rel).write_text(text)
    return root


@needs_bwrap
def test_a_file_that_only_looks_like_an_archive_is_kept_as_made(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The build re-dates the archives a setup script made; a `.gz` that is not gzip inside, or a
    `.tar` that is not a tar, stays byte for byte as the script wrote it and the build succeeds."""
    monkeypatch.setenv(ic.CACHE_ENV, str(tmp_path / "cache"))
    script = ("#!/bin/bash\nmkdir -p /odd\nprintf '\\x1f\\x8bnot gzip' > /odd/broken.gz\n"
              "printf 'plain text' > /odd/notes.tar\n")
    root = _export(tmp_path, {"docker/bash_scripts/setup_nl2b_fs_2.sh": script})
    tasks = {t.metadata[ic.KEY]["name"]: t for t in ic.load_intercode(root)}
    with tarfile.open(fileobj=io.BytesIO(tasks["fs2-00"].files[ic.SNAPSHOT].data())) as tar:
        assert tar.extractfile("odd/broken.gz").read() == b"\x1f\x8bnot gzip"
        assert tar.extractfile("odd/notes.tar").read() == b"plain text"
        assert tar.getmember("odd/broken.gz").mtime == ic.SENTINEL


@needs_bwrap
def test_bad_input_names_file_and_field(tmp_path: Path, backend: str) -> None:
    q = "data/nl2bash/nl2bash_fs_1.json"
    root = _export(tmp_path, {q: "[{\"query\": \"x\", \"gold\": \"ls\"},"})
    with pytest.raises(ClawloopError, match=r"nl2bash_fs_1\.json: not valid JSON"):
        ic.load_intercode(root)
    root = _export(tmp_path / "b", {q: json.dumps([{"query": "ok", "gold": "ls"}, {"query": "no gold"}])})
    with pytest.raises(ClawloopError, match=r"nl2bash_fs_1\.json: \[1\]\.gold: missing"):
        ic.load_intercode(root)
    suite = ic.load_intercode_suite(root)  # lenient: the good query loads, the bad one is an item
    bad = [i for i in suite.items if i.task is None]
    assert [i.name for i in bad] == ["fs1-01"] and "[1].gold: missing" in str(bad[0].error)
    root = _export(tmp_path / "c", {q: json.dumps([{"query": 3, "gold": "ls"}])})
    with pytest.raises(ClawloopError, match=r"\[0\]\.query: expected a string"):
        ic.load_intercode(root)
    root = _export(tmp_path / "d", {q: json.dumps({"query": "x"})})
    with pytest.raises(ClawloopError, match=r"nl2bash_fs_1\.json: expected a JSON list"):
        ic.load_intercode(root)
    root = _export(tmp_path / "e", {})
    (root / "docker/bash_scripts/setup_nl2b_fs_2.sh").unlink()
    with pytest.raises(ClawloopError, match=r"setup_nl2b_fs_2\.sh: file not found"):
        ic.load_intercode(root)
    root = _export(tmp_path / "f", {"docker/bash_scripts/setup_nl2b_fs_2.sh": "#!/bin/bash\necho broken\nexit 3\n"})
    with pytest.raises(ClawloopError, match=r"setup_nl2b_fs_2\.sh: exited with status 3 \(broken\)"):
        ic.load_intercode(root)


# ---------------------------------------------------------------------------------- episodes
@needs_bwrap
def test_oracle_succeeds_on_every_fixture_task(tasks: dict[str, ic.Task], backend: str) -> None:
    for name, t in tasks.items():
        rec = run_episode(t, "oracle", backend)
        assert (rec.outcome, rec.reward) == ("passed", 1.0), (name, rec.reason, rec.scores, rec.verifier_output)
        assert rec.benchmark == "intercode" and rec.scores["walk"] == "agent-world"
        assert rec.scores["file_diff"] == rec.scores["file_changes"] == rec.scores["answer_similarity"] == 0.33
        assert rec.scores["strict_reward"] == 1.0 and rec.scores["strict_diff_same"] == rec.scores["diff_same"]
    assert score_fields([rec]) == {"mean_score": 1.0, "full_score_rate": 1.0, "strict_mean_score": 1.0,
                                   "strict_full_score_rate": 1.0}


@needs_bwrap
def test_noop_stays_at_or_below_the_floor(tasks: dict[str, ic.Task], backend: str) -> None:
    """No-op: InterCode's first observation is the query; every missed change costs file_diff."""
    for name, t in tasks.items():
        rec = run_episode(t, "noop", backend)
        assert rec.outcome == "failed", (name, rec.scores)
        changes = len(rec.scores["diff_miss"])
        floor = 0.01 + round(0.33 * (1 - math.erf(changes)), 2) + 0.33 + rec.scores["answer_similarity"]
        assert rec.reward == pytest.approx(floor) and rec.reward < 1.0
        assert rec.scores["answer_similarity"] < 0.33, name  # the query is its observation
    for name in ("fs1-01", "fs1-02", "fs1-03", "fs1-04", "fs1-08"):  # the ones whose gold changes files
        assert run_episode(tasks[name], "noop", backend).scores["diff_miss"], name


@needs_bwrap
def test_restored_file_system_matches_its_baseline(tasks: dict[str, ic.Task], backend: str) -> None:
    """Right after the setup, the walk finds exactly the archive (no change to report), dated as
    documented: the script's own dates kept, the rest re-dated to the day before."""
    from clawloop.core.tasks.environment import TaskEnvironment

    t = tasks["fs1-06"]
    with TaskEnvironment(t, backend) as env:
        env.prepare()
        assert icr.git_status(ic.baseline_state(t), ic.walk_state(env.sandbox)) == ""
        r = env.exec("stat -c '%y %n' /garden/shed/seeds.log /garden/beds/north/plants.txt; ls /opt")
    lines = r.output.splitlines()
    assert lines[0].startswith("2020-01-01 12:00:00") and "clawloop-intercode" not in r.output
    import datetime

    day = datetime.datetime.now(datetime.UTC).date() - datetime.timedelta(days=1)
    assert lines[1].startswith(day.isoformat())


@needs_bwrap
def test_last_observation_comes_from_the_host(tasks: dict[str, ic.Task], backend: str) -> None:
    """The agent's answer is its last command's output as the host recorded it: a fake run.json or
    reward file in the sandbox counts for nothing; printing the right answer is all it can do."""
    t = tasks["fs1-00"]
    fake = json.dumps({"reward": 1.0})

    def forger(env: object) -> list[object]:
        cmds = [f"mkdir -p /tests /logs/verifier; echo '{fake}' > /logs/verifier/reward.json; "
                f"echo '{fake}' > /tests/run.json", "echo nothing to see"]
        return [env.exec(c) for c in cmds]  # type: ignore[attr-defined]

    rec = run_episode(t, forger, backend)
    assert rec.outcome == "failed" and rec.scores["answer_similarity"] == 0.0

    def printer(env: object) -> list[object]:  # prints the gold's output without running the gold
        return [env.exec("printf '%s\\n' '1 /garden/beds/north/plants.txt' '3 /garden/beds/south/plants.txt' "
                         "'4 total'")]  # type: ignore[attr-defined]

    rec = run_episode(t, printer, backend)
    # wrong counts (north has 3 lines, south 1), full marks: InterCode grades the text, and its
    # TF-IDF has no one-character tokens; printing is as far as an agent's reach goes
    assert rec.scores["answer_similarity"] == 0.33

    class R:
        def __init__(self, output: str, timed_out: bool = False) -> None:
            self.output, self.timed_out = output, timed_out

    assert ic.last_observation(t, None, [("a", R("x")), ("b", R("last"))]) == "last"
    assert ic.last_observation(t, None, [("b", R("partial", True))]) == ic.TIMED_OUT
    assert ic.last_observation(t, [{"role": "tool", "content": "out\n[exit code 0]"}], []) == "out"
    assert ic.last_observation(t, [], []) == t.instruction


@needs_bwrap
def test_broken_agent_world_falls_back_to_the_trusted_root(tasks: dict[str, ic.Task], backend: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    real = ic.walk_state

    def flaky(sb: object, *, trusted: bool = False) -> dict[str, list[object]]:
        calls.append(trusted)
        if len(calls) == 2:  # the gold sandbox's walk comes first, then the agent's
            raise ClawloopError("the walk wrote no state")
        return real(sb, trusted=trusted)

    monkeypatch.setattr(ic, "walk_state", flaky)
    rec = run_episode(tasks["fs1-02"], "oracle", backend)
    assert calls == [False, False, True]
    assert rec.outcome == "passed" and rec.scores["walk"] == "trusted-root"


@needs_bwrap
def test_local_backend_is_refused(tasks: dict[str, ic.Task], backend: str) -> None:
    import sandbox

    t = tasks["fs1-00"]
    with sandbox.open("bwrap") as sb:  # the setup's guard, where a local sandbox would run it
        r = sb.exec(t.setup[0], timeout=30, cwd="/", env={"SANDBOX_ROOT": "/tmp/x"})
        assert r.exit_code == 1 and "use bwrap or docker" in r.output
    with sandbox.open("local") as sb:
        v = ic.verify_intercode(sb, t, None, [])
    assert v.outcome == "error" and "isolated backend" in str(v.reason)


@needs_bwrap
def test_tasks_import_to_pool_and_harbor(tmp_path: Path, tasks: dict[str, ic.Task], backend: str) -> None:
    from typer.testing import CliRunner

    from clawloop.cli import app
    from clawloop.core.tasks.pool import read_pool

    pool = tmp_path / "pool.jsonl"
    r = CliRunner().invoke(app, ["tasks", "import", "--format", "intercode", str(FIX), "--out", str(pool)])
    assert r.exit_code == 0, r.output
    assert [t.id for t in read_pool(pool)] == [t.id for t in tasks.values()]
    # A Harbor copy would lose InterCode's grading (a Harbor dir's import never trusts a format
    # record, #51): refused in one line, nothing written
    out = tmp_path / "harbor"
    r = CliRunner().invoke(app, ["tasks", "import", "--format", "intercode", str(FIX), "--out", str(out), "--harbor"])
    assert r.exit_code != 0 and "write a pool" in str(r.exception), r.output
    assert not out.exists() or not any(out.iterdir())
    t = next(t for t in read_pool(pool) if t.metadata[ic.KEY]["name"] == "fs1-04")
    assert run_episode(t, "oracle", backend).outcome == "passed"  # the pool copy grades as InterCode


# ---------------------------------------------------------------------------------- replay
def _replay_module():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("ic_replay", ROOT / "benchmarks" / "intercode" / "replay.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ic_replay"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_replay_emulates_intercode_actions() -> None:
    rp = _replay_module()
    assert rp.docker_command('find . -name "*.txt"') == "find . -name *.txt"
    assert rp.docker_command("echo 'a b'") == "echo 'a b'"
    assert rp.docker_command('echo "a b" c') == "bash -c 'echo a' 'b c'"
    assert rp.docker_command('echo "unbalanced') is None
    assert rp.docker_command('find . -name "*.txt"', "bash") == 'find . -name "*.txt"'
    assert rp.simplify_path("/a/b", "../c") == "/a/c" and rp.simplify_path("/a", "/x/./y") == "/x/y"
    assert rp.intercode_step("cd /garden && ls", "/", "docker") == ("cd /garden && ls", "/garden && ls")
    cmd, wd = rp.intercode_step("ls", "/garden", "docker")
    assert wd is None and cmd.startswith("cd /garden 2>/dev/null ||") and cmd.endswith("\nls")
    th = {"actions": ["ls", "oops", "skip"], "observations": ["a", rp.RETRY + " ...", "skipped"],
          "rewards": [0.7, 0, 0.7]}
    assert rp.graded_turns(th) == (["ls"], 2)




VERIFIER_SHA256 = "1ec302f4b4e4b0939828fe394e6a9c7bafe7d3dff648265bdb6238ac1761dea8"


def test_the_verifier_text_every_task_carries_does_not_move() -> None:
    """Every InterCode task carries the verifier script and intercode_reward.py's text, so both are
    part of every task's content id, and the suite's `max_tasks: 50` samples by id: a renamed module
    in one comment moved the held-out sample to another 50 of the 200 (the layout move; base 7 -> 6
    of 50 on a different sample). Change them only with the suite's ids in mind, then the pin."""
    import hashlib

    from clawloop.core.tasks import intercode as ic

    digest = hashlib.sha256((ic._TEST_SH + ic._REWARD_SRC).encode()).hexdigest()
    assert digest == VERIFIER_SHA256, "the InterCode verifier text changed: every task id changes with it"
