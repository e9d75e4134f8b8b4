"""Command breadth (#76): benchmarks/breadth.py reads programs and flags as bash does, and the
synthesis.breadth share adds the families' breadth intents without moving any other draw."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from clawloop.config.synthesis import Forms, SynthesisParams
from clawloop.phases.synthesize.procedural.generate import synthesize
from clawloop.phases.synthesize.skills import families
from clawloop.phases.synthesize.steering import Plan

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("breadth", ROOT / "benchmarks" / "breadth.py")
assert _spec is not None and _spec.loader is not None
breadth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(breadth)


def test_uses_split_pipelines_substitutions_and_what_wrappers_run() -> None:
    got = breadth.uses("find /t -type f -size -32000c -print0 | xargs -0 -I{} md5sum {} | sort -t: -k2,2n")
    assert got == {"find", "find -type", "find -size", "find -print0", "xargs", "xargs -0", "xargs -I",
                   "md5sum", "sort", "sort -t", "sort -k"}
    assert breadth.uses("echo $(du -sh d | cut -f1) && tar czf a.tgz d") == {
        "echo", "du", "du -s", "du -h", "cut", "cut -f", "tar", "tar -c", "tar -z", "tar -f"}
    assert breadth.uses("find . -name '*.sh' -exec chmod 755 {} \\;") == {
        "find", "find -name", "find -exec", "chmod", "chmod OCTAL"}
    assert breadth.uses("head -5 f; awk -F: '{print $1}' f; date +%Y") == {
        "head", "head -n", "awk", "awk -F", "date", "date +FORMAT"}
    loop = "for f in *.txt; do\n  mv \"$f\" x\ndone\ngit commit -q -m m"
    assert breadth.uses(loop) == {"<for>", "mv", "git commit", "git commit -q", "git commit -m"}
    assert breadth.uses("bash -c 'comm -23 a b'") == {"bash", "bash -c", "comm", "comm -23"}


def test_coverage_ranks_the_uncovered_by_heldout_tasks() -> None:
    suites = {"a": {"1": "xargs rm", "2": "xargs -0 rm", "3": "sort f"}, "b": {"1": "comm a b"}}
    r = breadth.coverage(suites, {"p": "sort f\nrm x"})
    assert [row["use"] for row in r["uncovered"]] == ["xargs", "comm", "xargs -0"]
    assert r["summary"]["a"] == {"tasks": 3, "uses": 4, "uses_covered": 2, "weighted": 6,
                                 "weighted_covered": 3, "tasks_covered": 1}
    assert "| `xargs` | 2 | 0 | 0 |" in breadth.render(r)


def test_breadth_share_moves_no_other_draw() -> None:
    """A draw that does not take a breadth intent is byte-identical to the draw without the share
    (synth-heldout, made with the share at 0, does not move: test_synth_heldout checks it)."""
    cells = {(s, lv): 3 for s in families() for lv in (1, 2, 3)}
    forms = Forms(conversational=0.5, answer=0.5, elsewhere=0.25)
    plain = synthesize(Plan(quotas=cells), 0, 1, forms=forms)
    wide = synthesize(Plan(quotas=cells), 0, 1, forms=Forms(**{**forms.__dict__, "breadth": 0.5}))
    took = [w for w in wide if "breadth" in w.tags]
    assert len(took) >= 10 and {t.skill for t in took} <= {n for n, f in families().items() if f.breadth}
    assert all(p == w for p, w in zip(plain, wide, strict=True) if "breadth" not in w.tags)
    assert SynthesisParams(breadth=0.5).forms().breadth == 0.5 and Forms().breadth == 0


def test_the_default_pool_asks_for_the_top_uncovered_uses() -> None:
    pool = breadth.pool_scripts(breadth.default_pool(breadth=0.5))
    have = breadth.count(pool)
    for use in ("xargs", "xargs -0", "find -print0", "find -maxdepth", "md5sum", "grep -r", "sed -e",
                "basename", "diff", "tee", "comm", "find -perm", "uniq -d", "tr -d"):
        assert have[use], use


def test_breadth_phrasings_avoid_shell_core_wording() -> None:
    """No 6-word run of a breadth task's instruction is in a shell-core instruction (as
    test_synthesis checks for the families' other intents)."""
    import re

    def grams(text: str, n: int = 6) -> set[tuple[str, ...]]:
        ws = re.findall(r"[a-z0-9]+", text.lower())
        return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}

    held = set().union(*(grams(p.read_text("utf-8")) for p in (ROOT / "benchmarks" / "shell-core").glob("*/instruction.md")))
    cells = {(s, lv): 30 for s, f in families().items() for lv in f.breadth}
    tasks = [t for t in synthesize(Plan(quotas=cells), 5, 1, forms=Forms(breadth=1.0, conversational=0.5, answer=0.5))
             if "breadth" in t.tags]
    assert len(tasks) > 200
    assert not [t.instruction for t in tasks if grams(t.instruction) & held][:3]
