"""Procedural synthesis without a sandbox: the skill library, templates, determinism, diversity, the checker."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
import string
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from clawloop.config.knobs import NO_KNOBS, Knobs
from clawloop.config.synthesis import CurriculumParams, Forms
from clawloop.core.tasks.pool import read_pool, write_pool
from clawloop.core.tasks.task import Task
from clawloop.phases.synthesize import words
from clawloop.phases.synthesize.builder import TEST_SH, _checker_source
from clawloop.phases.synthesize.procedural.generate import diversity, manifest, synthesize
from clawloop.phases.synthesize.skills import LEVELS, families, git_available
from clawloop.phases.synthesize.steering import plan
from clawloop.phases.synthesize.templates import templates

EXPECTED = ["files", "text_search", "sort_count", "stream_edit", "json", "csv", "archives",
            "permissions_links", "find_bulk", "pipes_redirection", "scripting", "debugging", "git",
            "env_processes"]


def test_family_names_are_the_contract() -> None:
    names = list(families())
    want = [n for n in EXPECTED if n != "git" or git_available()]
    assert names == want
    assert len(names) >= 12
    for fam in families().values():
        assert sorted(fam.levels) == list(LEVELS), fam.name
        assert fam.generator_id == f"{fam.name}@{fam.version}"


def test_templates_have_five_phrasings_per_intent() -> None:
    fmt = string.Formatter()
    for name in [*families(), "_common"]:
        tpl = templates(name)
        assert tpl, name
        for intent, options in tpl.items():
            # answer-form phrasings (builder.ANSWER_PREFIX) rewrite the intent's own: fewer survive
            assert len(options) >= (2 if intent.startswith("answer:") else 5), f"{name}.{intent}"
            assert len(set(options)) == len(options), f"{name}.{intent} repeats a phrasing"
            slots = [{f for _, f, _, _ in fmt.parse(o) if f} for o in options]
            # every phrasing of one intent must be fillable from the same slots
            assert all(s <= set().union(*slots) for s in slots), f"{name}.{intent}"


def test_word_lists_are_clean() -> None:
    for kind in words.LISTS:
        ws = words.words(kind)
        assert len(ws) >= 25, kind
        assert all(w == w.strip() and "'" not in w and "/" not in w for w in ws), kind


@pytest.mark.parametrize("name", list(families()))
def test_generators_every_level(name: str) -> None:
    fam = families()[name]
    for level in LEVELS:
        for k in range(4):
            rng = random.Random(f"{name}-{level}-{k}")
            task = fam.generate(level, rng, NO_KNOBS)
            assert task.skill == name and task.level == level
            assert task.provenance.routine == "procedural"
            assert task.provenance.generator == fam.generator_id
            assert task.solution is not None and task.solution.steps
            assert len(task.solution.steps) <= task.limits.max_turns
            if level == 1:  # level 1 is one plain command for a tiny model
                assert len(task.solution.steps) == 1, task.solution.steps
            assert set(task.verifier.files) == {"test.sh", "check.py", "spec.json"}
            assert task.verifier.files["test.sh"].content == TEST_SH
            checks = json.loads(task.verifier.files["spec.json"].content)["checks"]
            assert checks and all(c.get("path", "/").startswith("/") for c in checks)
            assert all(p.startswith("/workspace/") for p in task.files)
            assert task.env.get("LC_ALL") == "C"
            assert Task.from_json(task.to_json()) == task
            # the same rng state gives the same task
            assert fam.generate(level, random.Random(f"{name}-{level}-{k}"), NO_KNOBS) == task


def _sample(knobs: Knobs, n: int = 12) -> list[Task]:
    out = []
    for i, fam in enumerate(families().values()):
        for level in LEVELS:
            if (i + level) % 3 == 0 and len(out) < n * 5:
                out.append(fam.generate(level, random.Random(f"k{i}{level}"), knobs))
    return out


def test_knobs_change_the_tasks() -> None:
    plain = _sample(NO_KNOBS)
    spaced = _sample(Knobs(names_with_spaces=True))
    assert sum(any(" " in p for p in t.files) for t in spaced) > sum(any(" " in p for p in t.files) for t in plain)
    loud = _sample(Knobs(loud_broken_start=True))
    assert sum(t.solution.steps[0].startswith("mkdir -p") for t in loud) >= len(loud) // 3
    more = _sample(Knobs(more_steps=True))
    assert all(len(m.solution.steps) > len(p.solution.steps) for m, p in zip(more, plain, strict=True))
    dis = _sample(Knobs(distractors=3))
    assert sum(len(t.files) for t in dis) > sum(len(t.files) for t in plain)
    assert all("knob:distractors=3" in t.tags for t in dis)


def test_same_seed_byte_identical_pool(tmp_path: Path) -> None:
    p = plan(None, 300, CurriculumParams(conditioning=False))
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_pool(a, synthesize(p, seed=11, iteration=2))
    write_pool(b, synthesize(p, seed=11, iteration=2))
    assert a.read_bytes() == b.read_bytes()
    c = tmp_path / "c.jsonl"
    write_pool(c, synthesize(p, seed=12, iteration=2))
    assert c.read_bytes() != a.read_bytes()
    back = read_pool(a)
    assert len(back) == 300
    assert {t.provenance.iteration for t in back} == {2}
    assert all(t.provenance.generator == f"{t.skill}@{families()[t.skill].version}" for t in back)


def test_thousand_tasks_unique_instructions() -> None:
    for params in (CurriculumParams(), CurriculumParams(conditioning=False)):
        tasks = synthesize(plan(None, 1000, params), seed=3)
        assert len(tasks) == 1000
        assert len({t.instruction for t in tasks}) == 1000
        assert len({t.id for t in tasks}) == 1000
        d = diversity(tasks)
        assert d.skills == len(families()) and d.unique_instructions == 1000
        assert d.skill_entropy > 3.5


def test_manifest_records_plan_and_versions() -> None:
    p = plan(None, 40, CurriculumParams())
    tasks = synthesize(p, seed=0)
    m = manifest(p, tasks, seed=0, iteration=1, params=CurriculumParams().model_dump())
    assert m["tasks"] == 40 and m["plan"]["total"] == 40
    assert set(m["generators"]) == set(families())
    assert sum(m["diversity"]["levels"].values()) == 40
    json.dumps(m)


def test_instructions_avoid_heldout_phrasing() -> None:
    """No 6-word run of a synthesized instruction appears in a held-out instruction."""
    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "shell-core"
    texts = [p.read_text("utf-8") for p in bench.glob("*/instruction.md")]
    if not texts:
        pytest.skip("benchmarks/shell-core not present")

    def grams(text: str, n: int = 6) -> set[tuple[str, ...]]:
        ws = re.findall(r"[a-z0-9]+", text.lower())
        return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}

    held = set().union(*(grams(t) for t in texts))
    tasks = synthesize(plan(None, 700, CurriculumParams(conditioning=False)), seed=5)
    hits = [t.instruction for t in tasks if grams(t.instruction) & held]
    assert not hits, hits[:3]


# ------------------------------------------------------------------------------ the checker
def _run_checker(tmp_path: Path, checks: list[dict]) -> tuple[int, str]:
    script = tmp_path / "check.py"
    script.write_text(_checker_source())
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"checks": checks}))
    p = subprocess.run([sys.executable, str(script), str(spec)], capture_output=True, text=True, cwd=tmp_path)
    return p.returncode, p.stderr


def test_checker_kinds(tmp_path: Path) -> None:
    w = tmp_path / "w"
    (w / "d" / "sub").mkdir(parents=True)
    (w / "a.txt").write_text("hello\n\n")
    (w / "n.txt").write_text("  42 \n")
    (w / "j.json").write_text('{"b": 1, "a": [1, 2]}')
    (w / "d" / "x").write_text("x\n")
    (w / "d" / "sub" / "y").write_text("y\n")
    (w / "m").write_text("m")
    os.chmod(w / "m", 0o640)
    os.symlink("a.txt", w / "link")
    with gzip.open(w / "g.gz", "wb") as f:
        f.write(b"zipped\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (("./top/one.txt", b"1\n"), ("top/two.txt", b"2\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    (w / "t.tar.gz").write_bytes(buf.getvalue())
    ok = [
        {"t": "file", "path": f"{w}/a.txt", "want": "hello", "norm": "text"},
        {"t": "file", "path": f"{w}/n.txt", "want": "42", "norm": "strip"},
        {"t": "file", "path": f"{w}/j.json", "want": '{"a": [1, 2], "b": 1}', "norm": "json"},
        {"t": "absent", "path": f"{w}/nothing"},
        {"t": "dir", "path": f"{w}/d"},
        {"t": "mode", "path": f"{w}/m", "mode": 0o640},
        {"t": "link", "path": f"{w}/link", "to": f"{w}/a.txt"},
        {"t": "tree", "path": f"{w}/d", "files": {"x": "x\n", "sub/y": None}},
        {"t": "gz", "path": f"{w}/g.gz", "want": "zipped\n", "norm": "exact"},
        {"t": "archive", "path": f"{w}/t.tar.gz", "files": {"top/one.txt": "1\n", "top/two.txt": "2\n"}},
        {"t": "run", "cmd": "echo hi; exit 3", "cwd": str(w), "want": "hi", "code": 3},
    ]
    assert _run_checker(tmp_path, ok) == (0, "")
    bad = [
        {"t": "file", "path": f"{w}/a.txt", "want": "hello\n", "norm": "exact"},
        {"t": "file", "path": f"{w}/a.txt", "want": "hell", "norm": "text"},
        {"t": "absent", "path": f"{w}/link"},
        {"t": "mode", "path": f"{w}/m", "mode": 0o644},
        {"t": "link", "path": f"{w}/a.txt", "to": f"{w}/a.txt"},
        {"t": "tree", "path": f"{w}/d", "files": {"x": "x\n"}},
        {"t": "archive", "path": f"{w}/t.tar.gz", "files": {"top/one.txt": "1\n"}},
        {"t": "run", "cmd": "echo hi", "cwd": str(w), "want": "ho"},
        {"t": "bogus"},
    ]
    for c in bad:
        code, err = _run_checker(tmp_path, [c])
        assert code == 1 and err.startswith("FAIL"), c


def test_docs_table_matches_the_library() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "skills.md").read_text("utf-8")
    for fam in families().values():
        for text in fam.levels.values():
            assert text in doc, f"docs/skills.md is stale for {fam.name}: {text!r}"


def test_conversational_register_changes_only_the_surface() -> None:
    import random

    from clawloop.config.synthesis import CurriculumParams
    from clawloop.phases.synthesize.procedural.generate import synthesize
    from clawloop.phases.synthesize.procedural.register import restyle
    from clawloop.phases.synthesize.steering import plan

    the_plan = plan(None, 42, CurriculumParams(conditioning=False))
    plain = synthesize(the_plan, seed=11)
    chatty = synthesize(the_plan, seed=11, forms=Forms(conversational=1.0))
    assert not any("`" in t.instruction for t in plain)
    styled = [t for t in chatty if "`" in t.instruction]
    assert len(styled) >= len(chatty) // 2
    assert any("`/workspace/" in t.instruction for t in styled)
    assert synthesize(the_plan, seed=11, forms=Forms(conversational=1.0)) == chatty  # deterministic
    t = plain[0]
    r = restyle(t, random.Random(3))
    assert (r.files, r.verifier, r.solution, r.skill, r.level) == (t.files, t.verifier, t.solution, t.skill, t.level)
    assert r.id != t.id and r.instruction != t.instruction
    assert restyle(r, random.Random(4)) == r  # already backticked: left alone


@pytest.mark.parametrize(("instruction", "expect"), [
    ("Delete old.log.", "`old.log`"),
    ('Copy "my notes.txt" to backup.tar.gz.', "`my notes.txt`"),
    ("Extract the field storage.port of conf.json.", "storage.port of `"),
])
def test_register_backticks_file_names_only(instruction: str, expect: str) -> None:
    import random

    from clawloop.core.tasks.task import FileSpec, Task, Verifier
    from clawloop.phases.synthesize.procedural.register import restyle

    t = Task(instruction=instruction, verifier=Verifier(files={"test.sh": FileSpec(content="exit 0")}))
    out = restyle(t, random.Random(0)).instruction
    assert expect in out, out
    assert "backup.tar.gz" not in instruction or "backup.tar.gz`" in out
