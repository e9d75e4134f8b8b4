"""Realistic file contents (logs, tables, config) drawn from the word lists.

Generators compute expected results from these Python values with the same semantics as the
shell tools (substring = grep, code-point order = `LC_ALL=C sort`), so the answers are exact.
"""

from __future__ import annotations

import random

from clawloop.phases.synthesize import words

LOG_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")


def log_line(rng: random.Random, day: int, level: str | None = None, service: str | None = None,
             msg: str | None = None) -> str:
    """`2024-03-07 12:04:59 WARN billing: amber ledger retry` (fixed-width time, sortable)."""
    t = f"2024-03-{day:02d} {rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
    level = level or rng.choice(LOG_LEVELS)
    service = service or words.pick(rng, "services")
    return f"{t} {level} {service}: {msg or words.sentence(rng, rng.randrange(2, 6))}"


def log_lines(rng: random.Random, n: int) -> list[str]:
    """`n` log lines in time order."""
    day = rng.randrange(1, 20)
    return sorted(log_line(rng, day + i * 3 // max(n, 1)) for i in range(n))


def ip(rng: random.Random) -> str:
    return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"


def access_line(rng: random.Random, addr: str, status: int) -> str:
    """A common-log-format line."""
    path = "/" + "/".join(words.pick(rng, "nouns") for _ in range(rng.randrange(1, 3)))
    method = rng.choice(["GET", "GET", "POST", "PUT"])
    return f'{addr} - - [12/Mar/2024:10:{rng.randrange(60):02d}:00] "{method} {path} HTTP/1.1" {status} {rng.randrange(100, 9999)}'


def distinct_ints(rng: random.Random, n: int, lo: int, hi: int) -> list[int]:
    """`n` distinct integers in [lo, hi), in random order."""
    return rng.sample(range(lo, hi), n)


def words_unique(rng: random.Random, kind: str, n: int) -> list[str]:
    """`n` distinct words of a list, in random order."""
    return words.sample(rng, kind, n)


def kv_config(rng: random.Random, keys: list[str]) -> dict[str, str]:
    """A small key=value config with plausible values."""
    out = {}
    for k in keys:
        kind = rng.randrange(3)
        out[k] = (str(rng.randrange(1, 9999)) if kind == 0 else rng.choice(["true", "false"])
                  if kind == 1 else words.pick(rng, "nouns"))
    return out


CONFIG_KEYS = ("port", "host", "timeout", "retries", "debug", "mode", "owner", "region", "level",
               "workers", "cache", "theme", "backup", "color", "limit", "verbose", "locale", "queue")
