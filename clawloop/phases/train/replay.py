"""Replay: the conversations a policy was trained on travel inside its checkpoint, and the next
iteration trains on a share of them again (`train.data.replay`).

Why: from iteration 2 on, the loop's pool sits at levels 3-4 of its own templates, and training on it
alone overwrote what iteration 1 taught (InterCode 5 -> 2, shell-core 9 -> 6 of 72: the gate refused
every iteration 2 of wave 4). Replaying earlier data is the continual-learning baseline against that.
Each SFT run writes the conversations it trained on (replayed ones included) as `CONVERSATIONS` in its
checkpoint, so the promoted policy's dir holds them for the next iteration, and older iterations'
data thins out geometrically.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from pathlib import Path

import orjson

from clawloop.errors import ClawloopError
from clawloop.phases.train.data import Conversation, check_messages

CONVERSATIONS = "sft_conversations.jsonl"
"""The file, in a checkpoint dir, of the conversations its SFT trained on (one JSON object a line)."""


def write_conversations(checkpoint: Path, conversations: Sequence[Conversation]) -> Path:
    """Write `conversations` as checkpoint/CONVERSATIONS (temp file + rename); returns the path."""
    path = checkpoint / CONVERSATIONS
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as f:
        for c in conversations:
            f.write(orjson.dumps({"task_id": c.task_id, "source": c.source, "messages": c.messages}) + b"\n")
    os.replace(tmp, path)
    return path


def read_conversations(checkpoint: Path) -> list[Conversation]:
    """The conversations checkpoint/CONVERSATIONS holds ([] without the file: a base, or a policy
    that no SFT made); a malformed line is an error naming the file, the line and the field."""
    path = checkpoint / CONVERSATIONS
    return read_conversation_file(path) if path.is_file() else []


def read_conversation_file(path: Path) -> list[Conversation]:
    """The conversations of a JSONL file in CONVERSATIONS' format (`task_id`, `messages`, `source`)."""
    if not path.is_file():
        raise ClawloopError(f"{path}: file not found")
    out = []
    for n, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise ClawloopError(f"{where}: not JSON ({e})") from None
        if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
            raise ClawloopError(f"{where}: task_id: expected a string")
        source = row.get("source", "reference")
        if not isinstance(source, str):
            raise ClawloopError(f"{where}: source: expected a string")
        out.append(Conversation(row["task_id"], check_messages(row.get("messages"), where), source,
                                {"replayed": True}))
    return out


def replay(previous: Sequence[Conversation], new: Sequence[Conversation], share: float,
           seed: int = 0) -> list[Conversation]:
    """`new` with round(share * len(new)) of `previous` (never one equal to a new conversation;
    all of them when fewer) drawn with `seed` and shuffled in."""
    keys = {c.key for c in new}
    candidates = [c for c in previous if c.key not in keys]
    rng = random.Random(seed)
    picked = rng.sample(candidates, min(len(candidates), round(share * len(new))))
    if not picked:
        return list(new)
    mixed = [*new, *picked]
    rng.shuffle(mixed)
    return mixed
