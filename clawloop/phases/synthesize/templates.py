"""Phrasing templates of the instructions, kept as data in data/templates/<family>.json.

A template file maps an intent key (e.g. "L1.count_lines") to at least five phrasings with
`{slot}` placeholders (str.format; literal braces doubled). `_common.json` holds the phrasings
of the generic follow-ups shared by all families.
"""

from __future__ import annotations

import json
import random
from functools import cache
from importlib import resources


@cache
def templates(family: str) -> dict[str, tuple[str, ...]]:
    """All intent keys of one family (or "_common") and their phrasings."""
    path = resources.files("clawloop.phases.synthesize.data").joinpath("templates", f"{family}.json")
    data = json.loads(path.read_text("utf-8"))
    return {k: tuple(v) for k, v in data.items() if not k.startswith("#")}


def phrase(family: str, intent: str, rng: random.Random, /, **slots: object) -> str:
    """One phrasing of `intent`, chosen by `rng`, with its slots filled."""
    options = templates(family)[intent]
    return options[rng.randrange(len(options))].format(**slots)
