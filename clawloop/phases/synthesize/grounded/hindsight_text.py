"""What a hindsight change means, in words: recognizers from a state diff to instruction items.

Each essential change becomes one item (a dict the `relabel.j2` template phrases). A created or
modified file must be described so exactly that its bytes follow from the instruction (the
verifier checks them by hash), so the recognizers only claim a relation when the bytes equal what
the standard tool would write:

  copy / move        same bytes as a seeded file (move: that file is gone)
  derive             lines of a seeded file: sorted, sorted unique, reversed, first/last k, the
                     lines containing (or not containing) a word, their count, the line count,
                     two files concatenated
  append / drop / replace   a modified file: text appended, lines with a word removed, every
                     occurrence of one word replaced by another
  literal            short text written out in the instruction (the fallback)
  mkdir / link / delete / chmod   directories, symbolic links, deletions, permission bits

Anything else (long or binary content no recognizer explains) is undescribable: no task.
Words that the trajectory's commands mention are preferred, so the instruction names what the
agent actually did.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from clawloop.phases.synthesize.grounded.state_diff import Change, essential

_SAFE = re.compile(r"^[A-Za-z0-9._/+-]+$")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@:-]{2,}")

SKILL_OF = {"copy": "files", "move": "files", "literal": "files", "mkdir": "files", "delete": "files",
            "link": "permissions_links", "chmod": "permissions_links", "append": "pipes_redirection",
            "replace": "stream_edit", "drop": "stream_edit", "grep": "text_search",
            "grep_v": "text_search", "grep_count": "text_search", "sorted": "sort_count",
            "sorted_unique": "sort_count", "reversed": "sort_count", "line_count": "sort_count",
            "head": "pipes_redirection", "tail": "pipes_redirection", "concat": "pipes_redirection"}
"""Skill family of each item kind (derive items by their `how`)."""
_SKILL_RANK = ("text_search", "stream_edit", "sort_count", "pipes_redirection", "permissions_links", "files")


class Undescribable(Exception):
    """A change no recognizer explains (reason in the message)."""


@dataclass(frozen=True)
class TextLimits:
    """How much literal text an instruction may spell out."""

    max_chars: int = 400
    max_lines: int = 12


def show(path: str) -> str:
    """A path as an instruction mentions it: bare when plain, in double quotes otherwise."""
    return path if _SAFE.match(path) and not path.startswith("-") else f'"{path}"'


def _text(data: bytes | None) -> str | None:
    if data is None or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(text: str) -> list[str]:
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n") if text else []


def _joined(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def _words(lines: list[str], mentioned: str) -> list[str]:
    """Candidate words of `lines`, those the commands mention first, longer ones first."""
    seen = {w for line in lines for w in _WORD.findall(line)}
    return sorted(seen, key=lambda w: (w not in mentioned, -len(w), w))


def _derive(data: bytes, sources: dict[str, str], mentioned: str) -> dict[str, Any] | None:
    """A relation between `data` and one or two seeded text files, or None."""
    text = _text(data)
    if text is None:
        return None
    got = _lines(text)
    for src, stext in sources.items():
        lines = _lines(stext)
        if not lines or text == stext:
            continue
        if text == _joined(sorted(lines)):
            return {"how": "sorted", "src": src}
        if text == _joined(sorted(set(lines))):
            return {"how": "sorted_unique", "src": src}
        if text == _joined(lines[::-1]):
            return {"how": "reversed", "src": src}
        for k in range(1, len(lines)):
            if text == _joined(lines[:k]):
                return {"how": "head", "src": src, "n": k}
            if text == _joined(lines[-k:]):
                return {"how": "tail", "src": src, "n": k}
        if got and text == _joined(got) and all(g in lines for g in got):
            for w in _words(got, mentioned):
                if [x for x in lines if w in x] == got:
                    return {"how": "grep", "src": src, "word": w}
            rest = [x for x in lines if x not in got]
            for w in _words(rest, mentioned):
                if [x for x in lines if w not in x] == got:
                    return {"how": "grep_v", "src": src, "word": w}
        if text.strip().isdigit():
            n = int(text.strip())
            if text == f"{len(lines)}\n" and "wc" in mentioned:
                return {"how": "line_count", "src": src}
            for w in _words(lines, mentioned):
                if w in mentioned and text == f"{sum(w in x for x in lines)}\n" and n > 0:
                    return {"how": "grep_count", "src": src, "word": w}
    for a, atext in sources.items():
        for b, btext in sources.items():
            if a != b and atext and btext and text == atext + btext:
                return {"how": "concat", "src": a, "src2": b}
    return None


def _literal(data: bytes, limits: TextLimits) -> str | None:
    text = _text(data)
    if text is None or len(text) > limits.max_chars or len(_lines(text)) > limits.max_lines:
        return None
    if "```" in text or any(ord(ch) < 32 and ch not in "\n\t" for ch in text):
        return None
    return text


def _modified(old: bytes | None, new: bytes, mentioned: str, sources: dict[str, str],
              limits: TextLimits) -> dict[str, Any] | None:
    otext, ntext = _text(old), _text(new)
    if otext is None or ntext is None:
        return None
    if ntext.startswith(otext) and otext.endswith("\n"):
        added = ntext[len(otext):]
        for src, stext in sources.items():
            if stext == added:
                return {"kind": "append", "src": src}
        if _literal(added.encode(), limits) is not None and added.endswith("\n"):
            return {"kind": "append", "text": added}
    olines, nlines = _lines(otext), _lines(ntext)
    if nlines and len(nlines) < len(olines) and ntext == _joined(nlines):
        gone = [x for x in olines if x not in nlines]
        for w in _words(gone, mentioned):
            if [x for x in olines if w not in x] == nlines:
                return {"kind": "drop", "word": w}
    pairs = set()
    a_tok, b_tok = re.split(r"(\W+)", otext), re.split(r"(\W+)", ntext)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a_tok, b_tok, autojunk=False).get_opcodes():
        if op != "equal":
            pairs.add(("".join(a_tok[i1:i2]), "".join(b_tok[j1:j2])))
    if len(pairs) == 1:
        a, b = next(iter(pairs))
        if a and a.strip() and "\n" not in a + b and otext.replace(a, b) == ntext:
            return {"kind": "replace", "old": a, "new": b}
    return None


@dataclass(frozen=True)
class _Evidence:
    """What a change is explained by: the seeded files, the commands, the files a move emptied."""

    before_text: dict[str, bytes]
    texts: dict[str, str]
    """Seeded files that are text, by relative path."""
    kept_hash: dict[str, str]
    """sha256 -> a seeded file the episode left alone (a copy's source)."""
    moves: dict[str, str]
    """Created path -> the deleted seeded file with its bytes (a move's source)."""
    origin: dict[str, str]
    mentioned: str
    limits: TextLimits

    def sources_for(self, path: str) -> dict[str, str]:
        """Seeded text files other than `path`, those its command names first."""
        said = self.origin.get(path, self.mentioned)
        named = sorted(self.texts, key=lambda p: (p.rsplit("/", 1)[-1] not in said,
                                                  p.rsplit("/", 1)[-1] not in self.mentioned, p))
        return {p: self.texts[p] for p in named if p != path}

    def file_item(self, c: Change, data: bytes) -> dict[str, Any]:
        """The item of a created or modified regular file with bytes `data`."""
        assert c.after is not None
        h = c.after["sha256"]
        mode = c.after.get("mode")
        extra = {"mode": f"{mode:o}"} if (mode != 0o644 if c.before is None or c.before["t"] != "f"
                                           else mode != c.before.get("mode")) else {}
        if c.path in self.moves:
            return {"kind": "move", "path": c.path, "src": self.moves[c.path], **extra}
        if h in self.kept_hash and self.kept_hash[h] != c.path:
            return {"kind": "copy", "path": c.path, "src": self.kept_hash[h], **extra}
        said = self.origin.get(c.path, self.mentioned)
        if c.kind == "modified":
            mod = _modified(self.before_text.get(c.path), data, said, self.sources_for(c.path), self.limits)
            if mod is not None:
                return {**mod, "path": c.path, **extra}
        rel = _derive(data, self.sources_for(c.path), said)
        if rel is not None:
            return {"kind": "derive", "path": c.path, "rewrite": c.kind == "modified", **rel, **extra}
        lit = _literal(data, self.limits)
        if lit is None:
            raise Undescribable(f"{c.path}: content is long or binary and no relation explains it")
        return {"kind": "literal", "path": c.path, "text": lit, "rewrite": c.kind == "modified", **extra}


def _moves(ess: list[Change]) -> dict[str, str]:
    """Created path -> the deleted seeded file whose bytes it has (each source moves once)."""
    deleted = {c.path: c for c in ess if c.kind == "deleted" and c.type == "f"}
    by_hash = {c.before["sha256"]: p for p, c in deleted.items() if c.before}
    moves: dict[str, str] = {}
    for c in ess:
        if c.kind in ("created", "retyped") and c.type == "f" and c.after and c.after["sha256"] in by_hash:
            src = by_hash[c.after["sha256"]]
            if src not in moves.values():
                moves[c.path] = src
    return moves


def _other_item(c: Change) -> dict[str, Any]:
    """The item of a change that is not a regular file's content (nor a moved file's deletion)."""
    if c.kind in ("created", "retyped") and c.type == "d":
        assert c.after is not None
        m = c.after.get("mode")
        return {"kind": "mkdir", "path": c.path, **({"mode": f"{m:o}"} if m != 0o755 else {})}
    if c.kind in ("created", "retyped", "modified") and c.type == "l":
        assert c.after is not None
        return {"kind": "link", "path": c.path, "target": c.after["target"]}
    if c.kind == "mode":
        assert c.after is not None and c.before is not None
        m, was = c.after["mode"], c.before["mode"]
        plus_x = m == was | 0o111 and m != was
        return {"kind": "chmod", "path": c.path, "mode": f"{m:o}", "plus_x": plus_x, "dir": c.type == "d"}
    if c.kind == "deleted":
        return {"kind": "delete", "path": c.path, "dir": c.type == "d"}
    raise Undescribable(f"{c.path}: unsupported change {c.kind} of type {c.type}")


def describe(changes: list[Change], before_text: dict[str, bytes], after_data: dict[str, bytes],
             commands: list[str], limits: TextLimits | None = None,
             origin: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """(instruction items, skill family) of `changes`; raises Undescribable.

    `before_text`: seeded files' bytes by relative path; `after_data`: bytes of the created or
    modified regular files by relative path; `origin`: the command that first changed each path
    (its words and file names are preferred when a change has several explanations)."""
    ess = essential(changes)
    touched = {c.path for c in changes}
    kept_hash: dict[str, str] = {}
    for p, b in sorted(before_text.items()):
        if p not in touched:
            kept_hash.setdefault(hashlib.sha256(b).hexdigest(), p)
    evidence = _Evidence(
        before_text=before_text, texts={p: t for p, b in before_text.items() if (t := _text(b)) is not None},
        kept_hash=kept_hash, moves=_moves(ess), origin=origin or {}, mentioned="\n".join(commands),
        limits=limits or TextLimits())
    moved = set(evidence.moves.values())
    items: list[dict[str, Any]] = []
    for c in ess:
        if c.kind in ("created", "retyped", "modified") and c.type == "f":
            data = after_data.get(c.path)
            if data is None:
                raise Undescribable(f"{c.path}: content not readable")
            items.append(evidence.file_item(c, data))
        elif not (c.kind == "deleted" and c.path in moved):
            items.append(_other_item(c))
    if not items:
        raise Undescribable("no change to describe")
    return items, primary_skill(items)


def item_skill(item: dict[str, Any]) -> str:
    return SKILL_OF.get(item.get("how") or item["kind"], "files")


def primary_skill(items: list[dict[str, Any]]) -> str:
    """The most specific skill family among the items."""
    skills = {item_skill(i) for i in items}
    return next(s for s in _SKILL_RANK if s in skills or s == "files")
