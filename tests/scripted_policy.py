"""A test double of the Policy protocol (clawloop.policy.types): replies fixed in advance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clawloop.policy.types import Conversation, Generation, SamplingParams


class ScriptedPolicy:
    """Replies fixed in advance, for tests.

    `replies` is either one list used for every conversation (the n-th reply of a conversation is
    `replies[n]`, counted by the assistant turns already in it) or a callable
    `(conversation) -> str | bytes`. Past the end of the list it replies `default`.
    """

    def __init__(self, replies: Sequence[str | bytes] | Any, *, default: str = "",
                 policy_id: str = "scripted") -> None:
        self.replies = replies
        self.default = default
        self.policy_id = policy_id
        self.calls: list[int] = []
        """Batch size of every generate call (tests check lockstep batching)."""

    def generate(self, conversations: Sequence[Conversation], sampling: SamplingParams,
                 *, tools: list[dict[str, Any]] | None = None) -> list[Generation]:
        self.calls.append(len(conversations))
        out = []
        for conv in conversations:
            if callable(self.replies):
                reply = self.replies(conv)
            else:
                n = sum(1 for m in conv if m.get("role") == "assistant")
                reply = self.replies[n] if n < len(self.replies) else self.default
            text = reply if isinstance(reply, str) else bytes(reply).decode("utf-8", errors="replace")
            words = len(text.split()) + 1
            out.append(Generation(text=text, prompt_tokens=sum(len(str(m.get("content", ""))) // 4
                                                               for m in conv),
                                  completion_tokens=words))
        return out
