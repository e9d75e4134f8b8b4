"""Tokens per forward pass of the decode loop's guesses, replayed offline on the model's own replies.

    .venv/bin/python benchmarks/perf/drafting.py [--model DIR] [--prompts 44] [--max-new-tokens 96] [--json]

A greedy reply is the model's own whatever is guessed (clawloop.policy.engine.decode_loop), so the tokens one
forward pass yields depend only on the reply and the drafter. This script generates the
checkpoint's greedy replies to first-turn shell-core prompts once (the prompts of rollout.py
--compare, default: the SmolLM2-135M base), then replays each reply through drafters and counts
the passes: no timing, no noise, the same figures on any machine. Rows:
- `context + snippets`: clawloop.policy.engine.drafter.Drafter without history (the loop's drafter until
  2026-12-01: the row's own context, then the tool-call wrapper); the baseline of the run;
- `+ earlier replies`: the same Drafter having `remember`ed every earlier reply of the run, as
  HFPolicy's drafter does now (`first 4 prompts`: the replies before them only);
- `best of M`: the best of up to M candidate drafts a pass (distinct first tokens, from the last
  matches in the context, the earlier replies and the snippets): what a token tree checking M
  branches in one pass would yield, at up to M times the guessed tokens.
The guesses per pass are `--guesses` (the loop's `rollout.engine.speculate`, 8; a batch-1 row gets them
all within the token budget). --json prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

Guesser = Callable[[list[int], int], list[list[int]]]
"""(context, k) -> candidate drafts, best first (the first one alone is an ordinary drafter)."""


def passes(prompt: Sequence[int], reply: Sequence[int], guess: Guesser, k: int) -> int:
    """Forward passes the decode loop needs for `reply` after `prompt`: each pass emits the accepted
    guesses of its best candidate and then the model's own next token."""
    n, pos = 0, 0
    while pos < len(reply):
        best = 0
        for draft in guess([*prompt, *reply[:pos]], k):
            ok = 0
            while ok < len(draft) and pos + ok < len(reply) and draft[ok] == reply[pos + ok]:
                ok += 1
            best = max(best, ok)
        pos += best + 1
        n += 1
    return n


def lookup_guesser(sources: Callable[[np.ndarray], list[tuple[np.ndarray, bool]]], most: int) -> Guesser:
    """Prompt-lookup candidates: for the context's last 4..1 tokens, what followed their last
    occurrences in each source (`own`: the context itself, its own tail excluded), up to `most`
    candidates with distinct first tokens; longer matches first, then later occurrences. With
    `most` 1, the lookup of clawloop.policy.engine.drafter.Drafter (tested)."""
    from clawloop.policy.engine.drafter import LONGEST_MATCH

    def guess(context: list[int], k: int) -> list[list[int]]:
        ctx = np.asarray(context, dtype=np.int64)
        out: list[list[int]] = []
        for n in range(min(LONGEST_MATCH, len(ctx)), 0, -1):
            tail = ctx[-n:]
            for source, own in sources(ctx):
                end = len(source) - n - (1 if own else 0)  # last possible start
                for start in np.flatnonzero(source[:max(end + 1, 0)] == tail[0])[::-1]:
                    if not np.array_equal(source[start:start + n], tail):
                        continue
                    follow = source[start + n:start + n + k]
                    follow = (np.resize(follow, k) if own and 0 < len(follow) < k else follow).tolist()
                    if follow and all(follow[0] != c[0] for c in out):
                        out.append(follow)
                        if len(out) >= most:
                            return out
        return out

    return guess


def drafter_rate(prompts: list[list[int]], replies: list[list[int]], snippets: Sequence[int], k: int,
                 history: bool, rows: range | None = None) -> float:
    """Tokens per pass over `rows` (default: all) with clawloop.policy.engine.drafter.Drafter, which
    `remember`s every earlier reply when `history` (as HFPolicy's does)."""
    from clawloop.policy.engine.drafter import Drafter

    tokens = total = 0
    for i in rows if rows is not None else range(len(prompts)):
        drafter = Drafter(k, snippets)
        for earlier in replies[:i] if history else []:
            drafter.remember(earlier)
        tokens += len(replies[i])
        total += passes(prompts[i], replies[i], lambda c, n, d=drafter: [d(c, n)], k)
    return round(tokens / total, 3)


def replay(prompts: list[list[int]], replies: list[list[int]], snippets: Sequence[int], k: int,
           history: bool, most: int, rows: range | None = None) -> float:
    """Tokens per pass over `rows` (default: all) with this drafter; the history of a reply is
    every reply before it."""
    snip = np.asarray(snippets, dtype=np.int64)
    tokens = total = 0
    for i in rows if rows is not None else range(len(prompts)):
        past = np.asarray([t for r in replies[:i] for t in r] if history else [], dtype=np.int64)
        guess = lookup_guesser(lambda ctx, past=past: [(ctx, True), (past, False), (snip, False)], most)
        tokens += len(replies[i])
        total += passes(prompts[i], replies[i], guess, k)
    return round(tokens / total, 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, help="model directory (default: the installed SmolLM2-135M base)")
    ap.add_argument("--prompts", type=int, default=44, help="first-turn shell-core prompts")
    ap.add_argument("--max-new-tokens", type=int, default=96, help="tokens per reply")
    ap.add_argument("--guesses", type=int, default=8, help="guessed tokens per pass (rollout.engine.speculate)")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args()

    from backends import first_turn_prompts

    from clawloop.policy.engine.drafter import tool_call_snippets
    from clawloop.policy.hf import HFPolicy, HFPolicyConfig
    from clawloop.policy.types import SamplingParams

    tmp = tempfile.TemporaryDirectory(prefix="clawloop-drafting-")
    model = args.model
    if model is None:
        from clawloop.bootstrap.base import make_base

        model = Path(tmp.name) / "base"
        make_base("smollm2-135m-instruct", model)
    policy = HFPolicy(model, HFPolicyConfig(engine={"forward": "auto", "speculate": args.guesses}))
    convs, tools = first_turn_prompts(args.prompts)
    gens = policy.generate(convs, SamplingParams(temperature=0.0, max_new_tokens=args.max_new_tokens), tools=tools)
    prompts = [list(g.prompt_ids or ()) for g in gens]
    replies = [list(g.completion_ids or ()) for g in gens]
    snippets = tool_call_snippets(policy.tokenizer, tools)
    k = args.guesses

    first4 = range(min(4, len(prompts)))
    rows = [{"drafter": name, "tokens_per_pass": drafter_rate(prompts, replies, snippets, k, history),
             "first4": drafter_rate(prompts, replies, snippets, k, history, first4)}
            for name, history in (("context + snippets", False), ("+ earlier replies", True))]
    for m in (2, 4, 6):
        for history in (False, True):
            rows.append({"drafter": f"best of {m}{' + earlier' if history else ''}",
                         "tokens_per_pass": replay(prompts, replies, snippets, k, history, m),
                         "first4": replay(prompts, replies, snippets, k, history, m, first4)})
    base = rows[0]["tokens_per_pass"]
    for r in rows:
        r["vs_first_row"] = round(r["tokens_per_pass"] / base, 2)
    print(f"drafting replay: {model}, {len(replies)} greedy replies, {sum(map(len, replies))} tokens, "
          f"{k} guesses a pass")
    print(f"{'drafter':<22} {'tokens/pass':>11} {'x first row':>11} {'first 4 prompts':>15}")
    for r in rows:
        print(f"{r['drafter']:<22} {r['tokens_per_pass']:>11} {r['vs_first_row']:>11} {r['first4']:>15}")
    if args.json:
        print(json.dumps({"model": str(model), "replies": len(replies), "guesses": k, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
