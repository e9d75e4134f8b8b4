"""The engine's decode loop: a batch whose finished rows leave it, with optional draft tokens.

`model.generate` decodes every row until the longest reply ends; shell-agent replies are short
tool calls of uneven length, so most of its decode rows were finished ones. This loop samples
like generate (temperature, then top-p; greedy at temperature 0), and drops a row from the batch
and its KV cache as soon as it emits a stop token.

With a `drafter` (clawloop.policy.engine.drafter), a step feeds each row its last token plus
guessed next tokens and checks them all in one forward pass: greedy rows keep the longest guessed
run that equals the model's own argmax, then its token after that; sampled rows accept a guess
with the model's probability of it and otherwise sample from the rest (speculative sampling with
a deterministic draft), so replies keep the model's distribution. Rejected guesses stay in the KV
cache as masked-out columns: each step advances the batch by its widest row, and drafts are only
made while the cache has room for that (`capacity`). A step feeds at most `draft_tokens` tokens
(rows x (1 + guesses)): on a CPU a forward pass of a few rows costs about what one row does, and
no less than the widest steps (benchmarks/perf/README.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


def probabilities(logits: Any, temperature: float, top_p: float) -> Any:
    """Sampling distribution per row: temperature, then nucleus (the smallest set of tokens whose
    probability reaches top_p, as transformers does)."""
    logits = logits.float() / temperature
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=False)
        cum = sorted_logits.softmax(-1).cumsum(-1)
        remove = cum <= (1 - top_p)
        remove[..., -1:] = False  # keep at least the most likely token
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(-1)


def sample_next(logits: Any, temperature: float, top_p: float) -> Any:
    """One token per row: argmax at temperature 0, else a sample of `probabilities`."""
    if temperature <= 0:
        return logits.argmax(-1)
    return torch.multinomial(probabilities(logits, temperature, top_p), 1).squeeze(1)


def accept(logits: Any, draft: list[int], temperature: float, top_p: float) -> list[int]:
    """The tokens a row emits from one checked step: the guesses the model accepts, then one of its
    own. `logits` [1 + len(draft), vocab]: position i predicts the token after guess i - 1."""
    if temperature <= 0:
        preds = logits.argmax(-1).tolist()
        n = 0
        while n < len(draft) and preds[n] == draft[n]:
            n += 1
        return [*draft[:n], preds[n]]
    probs = probabilities(logits, temperature, top_p)
    out: list[int] = []
    for i, guess in enumerate(draft):
        if torch.rand(()) < probs[i, guess]:
            out.append(guess)
            continue
        rest = probs[i].clone()
        rest[guess] = 0
        if float(rest.sum()) <= 0:  # the guess held all the mass (cannot be reached by rand < p)
            return [*out, guess]
        return [*out, int(torch.multinomial(rest, 1))]
    return [*out, int(torch.multinomial(probs[len(draft)], 1))]


MAX_GROWS = 3
"""Times one decode grows its cache for guesses (each grow copies the cache)."""


def drop_rows(cache: Any, gone: list[int]) -> list[int]:
    """Remove batch rows `gone` of a StaticCache/DynamicCache in place, moving the last rows into
    their slots (one row's copy each, where selecting the rest copied the whole cache); returns the
    new order: the old index of the row now at each position."""
    order = list(range(cache.layers[0].keys.shape[0]))
    for j in sorted(gone, reverse=True):  # every row after j is a kept one
        last = len(order) - 1
        if j != last:
            for layer in cache.layers:
                layer.keys[j] = layer.keys[last]
                layer.values[j] = layer.values[last]
            order[j] = order[last]
        order.pop()
    for layer in cache.layers:
        layer.keys, layer.values = layer.keys[:len(order)], layer.values[:len(order)]
        if hasattr(layer, "max_batch_size"):
            layer.max_batch_size = len(order)
    return order


def grow(cache: Any, extra: int) -> None:
    """Give every layer of a StaticCache (or prefix_cache.ColumnCache) `extra` more columns, in place."""
    new = torch.Tensor.new_zeros if getattr(cache, "zeroed", True) else torch.Tensor.new_empty
    for layer in cache.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name)
            setattr(layer, name, torch.cat([t, new(t, (*t.shape[:2], extra, t.shape[3]))], dim=2))
        if hasattr(layer, "max_cache_len"):
            layer.max_cache_len += extra


@dataclass
class DecodeBatch:
    """Prompts laid out for the loop (clawloop.policy.engine.prefix_cache.layout)."""

    ids: Any
    """[B, W] token ids, left-padded."""
    mask: Any
    """[B, W]: 1 where a column is the row's text."""
    cache: Any
    """Keys/values of the columns before `start`, with room for the reply."""
    start: int
    """First column whose keys/values are not in `cache` yet."""
    capacity: int | None = None
    """The cache's columns (None: W + max_new), grown when guesses need room."""


@dataclass
class Decoding:
    """When a row ends, how its tokens are drawn, and what guesses them."""

    max_new: int
    stop_ids: set[int]
    temperature: float = 0.0
    top_p: float = 1.0
    stopped: Callable[[list[int]], bool] | None = None
    """Ends a row early (stop strings) when it says so of the row's tokens."""
    drafter: Callable[[list[int], int], list[int]] | None = None
    """`drafter(context, k)` guesses up to k next tokens of a row."""
    draft_tokens: int = 24
    """Most tokens one step feeds: k = draft_tokens // rows - 1 guesses (none while rows > draft_tokens / 2)."""


OnFinish = Callable[[int, Any, int, list[int], Any], None]
"""`on_finish(row, cache, index, fed, columns)`: a row is done; `index` is its row in `cache` now,
`fed` its reply tokens whose keys/values the cache holds, at `columns`."""


def decode(forward: Callable[..., Any], batch: DecodeBatch, how: Decoding,
           on_finish: OnFinish | None = None) -> list[tuple[list[int], bool]]:
    """Generate up to `how.max_new` tokens per row of `batch` with `forward` (the transformers
    model's or clawloop.policy.engine.fast_forward.FastLM). Returns per row (tokens, stopped), the
    stop token included. `on_finish` runs before a finished row leaves the cache, so the caller
    can keep the prompt's and the reply's keys/values."""
    run = _Run(batch, how)
    with torch.inference_mode():
        positions = (batch.mask.cumsum(-1) - 1).clamp(min=0)[:, batch.start:]
        logits = forward(batch.ids[:, batch.start:], batch.mask, positions, batch.cache, batch.start,
                         last_only=True)[:, -1:]
        while True:
            finished = run.accept(logits)
            if on_finish is not None:
                for j in finished:
                    run.finish(j, on_finish)
            if len(finished) == len(run.alive):
                break
            if finished:
                run.drop(finished)
            ids, positions = run.next_step()
            logits = forward(ids, run.mask, positions, batch.cache, run.cur)
            run.cur += run.step_width
    return list(zip(run.tokens, run.done, strict=True))


class _Run:
    """The loop's state: the live rows, their tokens and guesses, and the cache's columns."""

    def __init__(self, batch: DecodeBatch, how: Decoding) -> None:
        self.how, self.cache, self.device = how, batch.cache, batch.ids.device
        rows = batch.ids.shape[0]
        self.width = batch.ids.shape[1]
        self.capacity = batch.capacity or self.width + how.max_new
        self.mask = batch.mask
        self.prompts = ([batch.ids[r][batch.mask[r].bool()].tolist() for r in range(rows)]
                        if how.drafter is not None else [])
        self.alive = list(range(rows))
        self.tokens: list[list[int]] = [[] for _ in range(rows)]
        self.done = [False] * rows
        self.drafts: list[list[int]] = [[] for _ in range(rows)]
        self.cur = self.width  # next free cache column
        self.step_width = 0  # columns the last step added
        self.grows = 0

    def accept(self, logits: Any) -> list[int]:
        """Add each live row's accepted tokens; the positions (in `alive`) of the rows that ended."""
        finished = []
        for j, row in enumerate(self.alive):
            draft = self.drafts[j]
            got = accept(logits[j, :1 + len(draft)], draft, self.how.temperature, self.how.top_p)
            if self.step_width and len(got) < 1 + len(draft):
                # Guesses after the accepted ones are not this row's text: mask their columns.
                self.mask[j, self.cur - self.step_width + len(got):self.cur] = 0
            if self._extend(row, got):
                finished.append(j)
        return finished

    def _extend(self, row: int, got: list[int]) -> bool:
        """Append `got` to the row's tokens until the row ends; whether it did."""
        how, tokens = self.how, self.tokens[row]
        for t in got:
            tokens.append(t)
            if t in how.stop_ids or (how.stopped is not None and how.stopped(tokens)):
                self.done[row] = True
                return True
            if len(tokens) >= how.max_new:
                return True
        return False

    def finish(self, j: int, on_finish: OnFinish) -> None:
        row = self.alive[j]
        # The reply tokens fed so far sit at the row's live columns after the prompt, in order.
        fed = (torch.nonzero(self.mask[j, self.width:]).squeeze(1) + self.width)[:len(self.tokens[row])]
        on_finish(row, self.cache, j, self.tokens[row][:len(fed)], fed)

    def drop(self, finished: list[int]) -> None:
        order = drop_rows(self.cache, finished)
        self.mask = self.mask.index_select(0, torch.tensor(order, device=self.device))
        self.alive = [self.alive[j] for j in order]

    def next_step(self) -> tuple[Any, Any]:
        """The next forward's ids and positions: each row's last token and its guesses, within the
        step's token budget and the cache's room (after this step every row must still fit one
        token per column); the mask grows by the step."""
        how, alive = self.how, self.alive
        need = max(how.max_new - len(self.tokens[r]) for r in alive)
        k = min(getattr(how.drafter, "k", 8), how.draft_tokens // len(alive) - 1) if how.drafter is not None else 0
        if k > 0 and need > 1 and self.capacity - self.cur - need < k and self.grows < MAX_GROWS:
            extra = need * k // 3 + k  # ~3 tokens kept per step of 1 + k columns
            grow(self.cache, extra)
            self.capacity, self.grows = self.capacity + extra, self.grows + 1
        k = min(k, self.capacity - self.cur - need)
        drafter = how.drafter
        self.drafts = [drafter(self.prompts[r] + self.tokens[r], k) if k > 0 and drafter else [] for r in alive]
        self.step_width = 1 + max(len(d) for d in self.drafts)
        ids = torch.zeros((len(alive), self.step_width), dtype=torch.long)
        new_mask = torch.zeros((len(alive), self.step_width), dtype=self.mask.dtype)
        for j, r in enumerate(alive):
            row = [self.tokens[r][-1], *self.drafts[j]]
            ids[j, :len(row)] = torch.tensor(row)
            new_mask[j, :len(row)] = 1
        self.mask = torch.cat([self.mask, new_mask.to(self.device)], dim=1)
        positions = (self.mask.cumsum(-1) - 1).clamp(min=0)[:, -self.step_width:]
        return ids.to(self.device), positions
