"""The command line keeps its promise (#77 item 4): every --out is checked before any work starts
and a bad one costs one `error:` line and exit 2 with nothing written or lost; `eval --out` is a run
directory for every agent, never mixed with an earlier run; `--json` puts only JSON on stdout;
`eval` exits non-zero when nothing loaded or the pass rate is under --fail-under; `tasks export`
writes all or nothing and counts what it left out; `--format` defaults to auto everywhere.

The commands run in this process through `clawloop.cli.main`, as the console script runs them.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from clawloop.cli import main
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.pool import write_pool

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "tests" / "fixtures" / "harbor" / "word-count"
CLAWGYM = ROOT / "benchmarks" / "fixtures" / "clawgym" / "sales-total"


class Ran:
    """What one command line did: its exit status and what it printed."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def one_error(self, starts: str = "error: ") -> str:
        """The single line on stderr, which must start with `starts`."""
        lines = self.err.strip().splitlines()
        assert self.code == 2 and len(lines) == 1 and lines[0].startswith(starts), (self.code, self.err)
        return lines[0]


@pytest.fixture()
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):  # noqa: ANN201
    def run(*args: str | Path) -> Ran:
        monkeypatch.setattr(sys, "argv", ["clawloop", *map(str, args)])
        try:
            main()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        got = capsys.readouterr()
        return Ran(code, got.out, got.err)
    return run


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture()
def pool(tmp_path: Path) -> Path:
    p = tmp_path / "pool.jsonl"
    write_pool(p, [load_harbor_task(TASK)])
    return p


# ------------------------------------------------------------------ every --out checked first
def test_eval_out_of_the_wrong_kind_or_place_is_one_line_and_runs_nothing(cli, tmp_path: Path) -> None:  # noqa: ANN001
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "episodes.jsonl").write_text("{}\n")
    a_file = tmp_path / "results"
    a_file.write_text("keep me\n")
    for out, says in [(earlier, "not empty"), (a_file, "is a file"), (Path("/proc/x"), "cannot write in /proc"),
                      (tmp_path / "x.jsonl", "names a directory")]:
        r = cli("eval", TASK, "--agent", "oracle", "--out", out)
        assert says in r.one_error(f"error: --out {out}: "), r.err
        assert "[eval" not in r.err  # before any episode
    assert _tree(earlier) == {"episodes.jsonl": b"{}\n"} and a_file.read_text() == "keep me\n"
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("argv", [
    ["tasks", "validate", "{pool}", "--out", "{dir}", "--rejections", "{tmp}/r.json", "--no-heldout"],
    ["tasks", "validate", "{pool}", "--out", "{tmp}/v.jsonl", "--rejections", "{dir}", "--no-heldout"],
    ["tasks", "synth", "--n", "2", "--out", "{dir}"],
    ["tasks", "import", str(TASK), "--out", "{dir}"],
    ["tasks", "probe", "{pool}", "--model", "{tmp}/no-model", "--out", "{dir}"],
    ["tasks", "probe", "{pool}", "--model", "{tmp}/no-model", "--out", "{tmp}/p.jsonl", "--trajectories", "{dir}"],
    ["tasks", "export", "{pool}", "--out", "{file}"],
    ["tasks", "export", "{pool}", "--out", "{dir}"],
    ["tasks", "import", str(TASK), "--harbor", "--out", "{dir}"],
    ["report", "{tmp}/no-runs", "--out", "{file}"],
    ["model", "init", "--out", "{file}"],
    ["model", "init", "--out", "{dir}"],
    ["model", "gguf", "{tmp}/no-model", "--out", "{dir}"],
    ["diagnose", "{tmp}/no-rollouts", "--out", "{file}"],
    ["train", "--base", "{tmp}/no-model", "--tasks", "{pool}", "--out", "{file}"],
    ["tasks", "synth", "--n", "2", "--out", "/proc/x"],
])
def test_every_out_is_checked_before_any_work(cli, tmp_path: Path, pool: Path, argv: list[str]) -> None:  # noqa: ANN001
    """A directory where a file goes, a file where a directory goes, a non-empty directory where a
    run goes, a place nothing can be created: one line naming the option, before any input is read
    (the inputs here would fail too, later) or any sandbox starts; nothing written."""
    d, f = tmp_path / "d", tmp_path / "f"
    d.mkdir()
    (d / "earlier").write_text("x")
    f.write_text("x")
    args = [a.format(pool=pool, dir=d, file=f, tmp=tmp_path) for a in argv]
    flag = args[args.index(next(a for a in args if a in (str(d), str(f), "/proc/x"))) - 1]
    before = _tree(tmp_path)
    r = cli(*args)
    r.one_error(f"error: {flag} ")
    assert "[" not in r.err and _tree(tmp_path) == before


# ------------------------------------------------------------------ eval --out: one run directory
def test_eval_out_is_a_run_directory_replaced_whole_only_with_force(cli, backend: str, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The model agent's trajectories and every agent's episodes.jsonl go to one directory; a
    second run into it is refused, and --force replaces it whole (no parts of two runs)."""
    from scripted_policy import ScriptedPolicy

    from clawloop.core.agent import model_agent

    submit = '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'
    monkeypatch.setattr(model_agent, "load_policy", lambda spec: ScriptedPolicy([submit] * 8))
    out = tmp_path / "run"
    base = ["eval", TASK, "--agent", "model", "--model", "any", "--no-params", "--backend", backend, "--out", out]
    assert cli(*base, "--samples", "2").code == 0
    first = _tree(out)
    assert "episodes.jsonl" in first and any(n.endswith(".parquet") for n in first)
    assert "not empty" in cli(*base).one_error(f"error: --out {out}: ")
    assert _tree(out) == first
    assert cli(*base, "--force").code == 0
    second = _tree(out)
    assert set(second) == set(first) and len(second["episodes.jsonl"].splitlines()) == 1  # 1 sample, not 2 + 1
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no staging left beside it
    # the oracle writes the same layout
    r = cli("eval", TASK, "--agent", "oracle", "--backend", backend, "--out", tmp_path / "oracle")
    assert r.code == 0 and set(_tree(tmp_path / "oracle")) == {"episodes.jsonl"}


# ------------------------------------------------------------------ --json: only JSON on stdout
def test_json_is_all_of_stdout(cli, backend: str, pool: Path, tmp_path: Path) -> None:  # noqa: ANN001
    r = cli("eval", TASK, "--agent", "oracle", "--backend", backend, "--json")
    assert r.code == 0 and json.loads(r.out)["passed"] == 1 and "total" in r.err  # the table on stderr
    r = cli("tasks", "validate", pool, "--out", tmp_path / "v.jsonl", "--rejections", tmp_path / "r.json",
            "--no-heldout", "--backend", backend, "--json")
    assert r.code == 0 and json.loads(r.out)["kept"] == 1 and "kept 1 of 1" in r.err


# ------------------------------------------------------------------ eval's exit status
def test_fail_under_gates_the_pass_rate(cli, backend: str) -> None:  # noqa: ANN001
    assert cli("eval", TASK, "--agent", "oracle", "--backend", backend, "--fail-under", "1").code == 0
    r = cli("eval", TASK, "--agent", "noop", "--backend", backend, "--fail-under", "0.5", "--json")
    assert r.code == 1 and json.loads(r.out)["pass_rate"] == 0.0
    assert r.err.strip().splitlines()[-1] == "fail: pass rate 0.000 is below --fail-under 0.5"


def test_nothing_loaded_is_not_a_success(cli, tmp_path: Path) -> None:  # noqa: ANN001
    shutil.copytree(TASK, tmp_path / "suite" / "broken")
    (tmp_path / "suite" / "broken" / "instruction.md").unlink()
    r = cli("eval", tmp_path / "suite", "--agent", "oracle", "--json")
    assert r.code == 2 and json.loads(r.out)["unloadable"] == 1  # the summary still says why
    assert r.err.strip().splitlines()[-1] == "error: no task to run: all 1 tasks are unloadable (listed above)"
    (tmp_path / "empty.jsonl").write_text("")
    r = cli("eval", tmp_path / "empty.jsonl", "--agent", "oracle")
    assert r.code == 2 and r.err.strip().splitlines()[-1] == "error: no task to run: the suites hold no task"


# ------------------------------------------------------------------ tasks export: all or nothing
def test_export_leaves_out_answer_form_tasks_and_says_so(cli, tmp_path: Path) -> None:  # noqa: ANN001
    pool = tmp_path / "synth.jsonl"
    assert cli("tasks", "synth", "--n", "6", "--answer", "1", "--seed", "0", "--out", pool).code == 0
    answer = sum("answer" in json.loads(line)["metadata"] for line in pool.read_text().splitlines())
    assert 0 < answer < 6  # a mixed pool
    r = cli("tasks", "export", pool, "--out", tmp_path / "dirs")
    assert r.code == 0, r.err
    assert f"wrote {6 - answer} task directories" in r.out and f"left out {answer} tasks" in r.out
    assert "(answer " in r.out and "write a pool (.jsonl)" in r.out
    assert len(list((tmp_path / "dirs").iterdir())) == 6 - answer
    only = tmp_path / "only-answer.jsonl"
    only.write_text("".join(line + "\n" for line in pool.read_text().splitlines()
                            if "answer" in json.loads(line)["metadata"]))
    r = cli("tasks", "export", only, "--out", tmp_path / "none")
    assert "no task to write" in r.one_error() and not (tmp_path / "none").exists()


# ------------------------------------------------------------------ one --format default
def test_import_detects_the_format_as_eval_does(cli, tmp_path: Path) -> None:  # noqa: ANN001
    r = cli("tasks", "import", CLAWGYM, "--out", tmp_path / "gym.jsonl")
    assert r.code == 0 and "wrote 1 tasks" in r.out, r.err
