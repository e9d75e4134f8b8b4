"""Draft tokens for speculative decoding without a draft model (the engine's decode loop).

A shell agent's reply is mostly predictable text: the tool-call wrapper its chat template writes
(`<tool_call>\\n{"name": "bash", "arguments": {"command": "` and back), and paths and names it
copies from the task or an earlier command. `Drafter` guesses the next tokens by finding the
reply's last few tokens earlier in the row's own context (prompt lookup) or in the rendered
tool-call snippets, and proposes what followed them there. The model then checks all guesses in
one forward pass (clawloop.policy.engine.decode_loop): greedy replies stay exactly the model's
own, sampled ones keep its distribution, and each pass yields one token or more. Each source adds
tokens per pass (benchmarks/perf/README.md, measured by benchmarks/perf/drafting.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LONGEST_MATCH = 4
"""Longest context suffix looked up; the longest one found wins."""
HISTORY_TOKENS = 16384
"""Most tokens of earlier replies kept as a lookup source (the newest)."""


def tool_call_snippets(tokenizer: object, tools: list[dict] | None) -> list[int]:
    """Token ids of one assistant tool-call turn per tool, as the chat template writes them: the
    wrapper every reply shares."""
    if not tools:
        return []
    user = [{"role": "user", "content": "x"}]
    head = tokenizer.apply_chat_template(user, tokenize=False, add_generation_prompt=True)  # type: ignore[attr-defined]
    ids: list[int] = []
    for tool in tools:
        fn = tool.get("function", tool)
        props = (fn.get("parameters") or {}).get("properties") or {}
        args = {name: "ls" for name in props}
        call = [*user, {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": fn.get("name", ""), "arguments": args}}]}]
        try:
            text = tokenizer.apply_chat_template(call, tokenize=False)  # type: ignore[attr-defined]
        except Exception:  # a template without tool calls: no snippets, prompt lookup only
            return []
        if text.startswith(head):
            ids += tokenizer(text[len(head):], add_special_tokens=False)["input_ids"]  # type: ignore[operator]
    return ids


class Drafter:
    """Guesses up to `k` next tokens of a row from its context, earlier replies and fixed snippets.

    For each suffix length (longest first) the sources are tried in that order: the row's own
    context, the replies `remember`ed before (an agent repeats its commands and their shapes
    across episodes and turns), the tool-call snippets."""

    def __init__(self, k: int, snippets: Sequence[int] = (), history_tokens: int = HISTORY_TOKENS) -> None:
        self.k = k
        self.snippets = np.asarray(snippets, dtype=np.int64)
        self.history = np.zeros(0, dtype=np.int64)
        self.history_tokens = history_tokens

    def remember(self, reply: Sequence[int]) -> None:
        """Keep a finished reply's tokens as a lookup source (the newest `history_tokens`)."""
        history = np.concatenate([self.history, np.asarray(reply, dtype=np.int64)])
        self.history = history[max(0, len(history) - self.history_tokens):]

    def __call__(self, context: Sequence[int], k: int | None = None) -> list[int]:
        k = self.k if k is None else min(k, self.k)
        if k <= 0 or not context:
            return []
        ctx = np.asarray(context, dtype=np.int64)
        for n in range(min(LONGEST_MATCH, len(ctx)), 0, -1):
            tail = ctx[-n:]
            for source, own in ((ctx, True), (self.history, False), (self.snippets, False)):
                end = len(source) - n - (1 if own else 0)  # the context's own tail is no match
                if end < 0:
                    continue
                hit = _last_match(source[:end + n], tail)
                if hit >= 0:
                    follow = source[hit + n:hit + n + k]
                    if own and 0 < len(follow) < k:
                        # The match runs into the row's own tail: a loop (a model repeating
                        # itself) goes on with the same period.
                        follow = np.resize(follow, k)
                    if len(follow):
                        return follow.tolist()
        return []


def _last_match(source: np.ndarray, tail: np.ndarray) -> int:
    """Start of the last occurrence of `tail` in `source`, or -1."""
    n = len(tail)
    if len(source) < n:
        return -1
    starts = np.flatnonzero(source[:len(source) - n + 1] == tail[0])
    for s in starts[::-1]:
        if np.array_equal(source[s:s + n], tail):
            return int(s)
    return -1
