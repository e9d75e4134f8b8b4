"""Every relative link in README.md and docs/ resolves: the file (or directory) exists, and a
`#fragment` names a heading of the target as GitHub makes its anchor. A moved module renames a
heading, so a link into benchmarks/perf/README.md breaks silently without this (#77 item 4)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link in a heading: its text
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        if m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            base = anchor(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    """The relative link targets of a Markdown file (code blocks and inline code left out)."""
    text = CODE.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))
    return [t for t in LINK.findall(text) if not re.match(r"[a-zA-Z][a-zA-Z+.-]*:", t)]


def test_anchor_follows_github() -> None:
    assert anchor("Executor (clawloop/core/executor.py): Ray vs local threads") == \
        "executor-clawloopcoreexecutorpy-ray-vs-local-threads"
    assert anchor("What `dvc repro` runs") == "what-dvc-repro-runs"
    assert anchor("clawloop tasks build-image") == "clawloop-tasks-build-image"


def test_the_checker_finds_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Top\n[ok](#top) [gone](b.md) [bad](#nowhere) `[code](x.md)`\n")
    assert links(tmp_path / "a.md") == ["#top", "b.md", "#nowhere"]
    assert anchors(tmp_path / "a.md") == {"top"}


def test_every_relative_link_in_the_docs_resolves() -> None:
    broken = []
    for doc in DOCS:
        for target in links(doc):
            file, _, fragment = target.partition("#")
            dest = (doc.parent / file).resolve() if file else doc
            where = f"{doc.relative_to(ROOT)}: {target}"
            if not dest.exists():
                broken.append(f"{where} (no such file)")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                broken.append(f"{where} (no heading with that anchor in {dest.name})")
    assert not broken, "broken links:\n" + "\n".join(broken)
