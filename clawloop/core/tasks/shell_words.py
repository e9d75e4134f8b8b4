"""Shell scripts split the way bash reads them: a script into its top-level commands (`&&`, `||`,
`;`, newlines; quotes, `$()`, `()` and heredocs kept whole) and a command into its words. What
Dockerfile-lite, the Harbor importer and the uid check read RUN lines and test scripts with."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


@dataclass(frozen=True)
class Segment:
    """One simple command (or pipeline/group) of a script and the separator after it."""

    text: str
    sep: str


def shell_segments(script: str) -> list[Segment]:
    """Split a script at top-level `&&`, `||`, `;` and newlines (quotes, $(), (), heredocs kept)."""
    return _Splitter(script).split()


class _Splitter:
    """A script read left to right: the current segment's characters, the open quote, the open
    groups, and the heredocs whose bodies follow the current line."""

    def __init__(self, script: str) -> None:
        self.script, self.n, self.i = script, len(script), 0
        self.out: list[Segment] = []
        self.buf: list[str] = []
        self.quote: str | None = None
        self.stack: list[str] = []  # open (, { groups and ${ expansions
        self.heredocs: list[tuple[str, bool]] = []

    def split(self) -> list[Segment]:
        while self.i < self.n:
            self.step(self.script[self.i])
        self.flush("")
        return self.out

    def flush(self, sep: str) -> None:
        text = "".join(self.buf).strip()
        self.buf.clear()
        if text:
            self.out.append(Segment(text, sep))
        elif self.out and sep != "\n":
            self.out[-1] = Segment(self.out[-1].text, sep)

    def step(self, c: str) -> None:
        """Read the character at `i` (and what belongs to it)."""
        script, i, buf = self.script, self.i, self.buf
        if self.quote:
            buf.append(c)
            if c == "\\" and self.quote == '"' and i + 1 < self.n:
                buf.append(script[i + 1])
                self.i += 1
            elif c == self.quote:
                self.quote = None
            self.i += 1
        elif c == "\\" and i + 1 < self.n:
            buf.append(script[i:i + 2])
            self.i += 2
        elif c == "#" and (not buf or buf[-1][-1:].isspace() or buf[-1][-1:] in ";&|("):
            while self.i < self.n and script[self.i] != "\n":  # a comment: dropped
                self.i += 1
        else:
            self.nest(c)
            if not self.separate(c):
                buf.append(c)
                self.i += 1

    def nest(self, c: str) -> None:
        """Open or close a quote, a group or an expansion; note a heredoc."""
        script, i, stack = self.script, self.i, self.stack
        if c in "'\"`":
            self.quote = c
        elif c in "({":
            if c == "(" or (i + 1 < self.n and script[i + 1].isspace()):
                stack.append(c)
            elif self.buf and self.buf[-1].endswith("$"):
                stack.append("$")
        elif c == ")" and "(" in stack:
            while stack.pop() != "(":
                pass
        elif c == "}" and stack and stack[-1] in "{$":
            stack.pop()
        elif not stack and c == "<" and script.startswith("<<", i) and not script.startswith("<<<", i):
            m = HEREDOC.match(script, i)
            if m:
                self.heredocs.append((m.group(3), m.group(1) == "-"))

    def separate(self, c: str) -> bool:
        """End the segment at a top-level separator (True: the separator is consumed)."""
        script, i = self.script, self.i
        if not self.stack and (script.startswith("&&", i) or script.startswith("||", i)):
            self.flush(script[i:i + 2])
            self.i += 2
        elif c == ";" and script.startswith(";;", i):  # a case arm ends: no split
            self.buf.append(";;")
            self.i += 2
        elif not self.stack and c == ";":
            self.flush(";")
            self.i += 1
        elif c == "\n" and self.heredocs:  # the bodies belong to the current segment
            self.buf.append(c)
            self.i += 1
            self.heredoc_bodies()
            if not self.stack:
                self.flush("\n")
        elif c == "\n" and not self.stack:
            self.flush("\n")
            self.i += 1
        else:
            return False
        return True

    def heredoc_bodies(self) -> None:
        """Take the lines of every pending heredoc, each up to its end word."""
        script, n = self.script, self.n
        for word, strip in self.heredocs:
            while self.i < n:
                j = script.find("\n", self.i)
                j = n if j < 0 else j
                line = script[self.i:j]
                self.buf.append(script[self.i:j + 1])
                self.i = j + 1
                if (line.lstrip("\t") if strip else line) == word:
                    break
        self.heredocs = []


def command_words(segment: str) -> list[str]:
    """The words of the segment's first simple command, as bash reads them (`bashlex`: line
    continuations, quotes, assignments), without leading `VAR=x`, `sudo`, `exec`."""
    import bashlex

    try:
        node = bashlex.parse(segment)[0]
        while node.kind in ("list", "pipeline", "compound") and getattr(node, "parts", None):
            node = node.parts[0]
        words = [p.word for p in getattr(node, "parts", []) if p.kind == "word"]
    except Exception:  # bashlex raises bare errors (NotImplementedError, ParsingError) on rare syntax
        first = re.sub(r"\\\n", " ", segment).split("\n", 1)[0]
        try:
            words = shlex.split(first)
        except ValueError:
            words = first.split()
    while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or words[0] in ("sudo", "exec")):
        words = words[1:]
    return words
