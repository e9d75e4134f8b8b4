"""Word lists shipped in clawloop/phases/synthesize/data/ and small helpers that draw names and text.

Every draw goes through the caller's `random.Random`, so a seed fixes the whole task.
"""

from __future__ import annotations

import random
from functools import cache
from importlib import resources

LISTS = ("nouns", "adjectives", "people", "cities", "fruits", "services", "unicode")


@cache
def words(kind: str) -> tuple[str, ...]:
    """The word list `kind` (one word a line in data/<kind>.txt), deduplicated, in file order."""
    if kind not in LISTS:
        raise KeyError(f"unknown word list {kind!r}")
    text = resources.files("clawloop.phases.synthesize.data").joinpath(f"{kind}.txt").read_text("utf-8")
    seen: dict[str, None] = {}
    for line in text.splitlines():
        w = line.strip()
        if w and not w.startswith("#"):
            seen[w] = None
    return tuple(seen)


def pick(rng: random.Random, kind: str) -> str:
    """One word of list `kind`."""
    return rng.choice(words(kind))


def sample(rng: random.Random, kind: str, k: int) -> list[str]:
    """`k` distinct words of list `kind` (k may not exceed the list)."""
    return rng.sample(words(kind), k)


def plain_stem(rng: random.Random) -> str:
    """A file stem like `amber_ledger` or `harbor-notes2`: safe for any shell command."""
    shape = rng.randrange(4)
    a, n = pick(rng, "adjectives"), pick(rng, "nouns")
    shapes = (lambda: f"{a}_{n}", lambda: f"{n}_{pick(rng, 'nouns')}", lambda: f"{a}-{n}",
              lambda: f"{n}{rng.randrange(2, 99)}")
    return shapes[shape]()  # drawn after a and n, as the frozen suites were


def awkward_stem(rng: random.Random) -> str:
    """A stem that breaks unquoted commands: spaces, a leading dash, unicode, parentheses."""
    shape = rng.randrange(5)
    a, n = pick(rng, "adjectives"), pick(rng, "nouns")
    shapes = (lambda: f"{a} {n}", lambda: f"{pick(rng, 'unicode')} {n}", lambda: f"{n} ({rng.randrange(2, 9)})",
              lambda: f"{pick(rng, 'unicode')}_{n}", lambda: f"{a} {n} {pick(rng, 'unicode')}")
    return shapes[shape]()


def sentence(rng: random.Random, n: int | None = None) -> str:
    """A plain lowercase line of `n` (default 3-7) words; never contains a file-ish token."""
    n = n if n is not None else rng.randrange(3, 8)
    pool = ("nouns", "adjectives", "nouns", "cities", "fruits")
    return " ".join(pick(rng, pool[rng.randrange(len(pool))]) for _ in range(n))
