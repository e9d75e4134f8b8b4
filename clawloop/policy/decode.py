"""HFPolicy's decode loop: a batch whose finished rows leave it, with optional draft tokens.

`model.generate` decodes every row until the longest reply ends, so a batch of 32 replies of
~40 tokens with one of 96 computes 32 x 96 rows. Shell-agent replies are short tool calls of
uneven length; measured on first-turn shell-core prompts, more than half of generate's decode
rows were finished ones. This loop samples like generate (temperature, then top-p; greedy at
temperature 0), and drops a row from the batch and its KV cache as soon as it emits a stop token.

With a `drafter` (clawloop.policy.draft), a step feeds each row its last token plus guessed next
tokens and checks them all in one forward pass: greedy rows keep the longest guessed run that
equals the model's own argmax, then its token after that; sampled rows accept a guess with the
model's probability of it and otherwise sample from the rest (speculative sampling with a
deterministic draft), so replies keep the model's distribution. Rejected guesses stay in the KV
cache as masked-out columns: each step advances the batch by its widest row, and drafts are only
made while the cache has room for that (`capacity`). A step feeds at most `draft_tokens` tokens
(rows x (1 + guesses)): a forward pass costs about the same from 1 to ~16-24 rows on a CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _cache_kwarg() -> str:
    """transformers renamed the forward's `past_key_values` to `cache` (5.2x); use what it has."""
    import inspect

    from transformers import LlamaForCausalLM

    return "cache" if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters else "past_key_values"


def hf_forward(model: Any) -> Callable[..., Any]:
    """`forward(ids, mask, positions, cache, start, last_only)` -> logits [B, T, vocab] through a
    transformers model (clawloop.policy.fastlm has the same signature)."""
    import torch

    kwarg = _cache_kwarg()

    def forward(ids: Any, mask: Any, positions: Any, cache: Any, start: int, last_only: bool = False) -> Any:
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                    cache_position=torch.arange(start, start + ids.shape[1], device=ids.device),
                    logits_to_keep=1 if last_only else 0, **{kwarg: cache})
        return out.logits

    return forward


def probabilities(logits: Any, temperature: float, top_p: float) -> Any:
    """Sampling distribution per row: temperature, then nucleus (the smallest set of tokens whose
    probability reaches top_p, as transformers does)."""
    import torch

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
    import torch

    if temperature <= 0:
        return logits.argmax(-1)
    return torch.multinomial(probabilities(logits, temperature, top_p), 1).squeeze(1)


def accept(logits: Any, draft: list[int], temperature: float, top_p: float) -> list[int]:
    """The tokens a row emits from one checked step: the guesses the model accepts, then one of its
    own. `logits` [1 + len(draft), vocab]: position i predicts the token after guess i - 1."""
    import torch

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
    """Give every layer of a StaticCache (or kv_reuse.ColumnCache) `extra` more columns, in place."""
    import torch

    new = torch.Tensor.new_zeros if getattr(cache, "zeroed", True) else torch.Tensor.new_empty
    for layer in cache.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name)
            setattr(layer, name, torch.cat([t, new(t, (*t.shape[:2], extra, t.shape[3]))], dim=2))
        if hasattr(layer, "max_cache_len"):
            layer.max_cache_len += extra


def decode(forward: Callable[..., Any], input_ids: Any, attention: Any, cache: Any, C: int, *, max_new: int,
           stop_ids: set[int], temperature: float, top_p: float,
           on_finish: Callable[[int, Any, int, list[int], Any], None] | None = None,
           stopped: Callable[[list[int]], bool] | None = None,
           drafter: Callable[[list[int], int], list[int]] | None = None, draft_tokens: int = 24,
           capacity: int | None = None) -> list[tuple[list[int], bool]]:
    """Generate up to `max_new` tokens per row after `input_ids` (columns from C on are not in
    `cache` yet) with `forward` (`hf_forward` or a clawloop.policy.fastlm.FastLM). Returns per row
    (tokens, stopped), the stop token included. `on_finish(row, cache, index, fed, columns)` runs
    before a finished row leaves the cache (`index`: its row there now; `fed`: its reply tokens whose
    keys/values the cache holds, at `columns`), so the caller can keep the prompt's and the reply's
    keys/values; `stopped(tokens)` ends a row early (stop strings).
    `drafter(context, k)` guesses up to k next tokens for each row, k = draft_tokens // rows - 1
    (a step feeds at most `draft_tokens` tokens: none are guessed while rows > draft_tokens / 2);
    `capacity`: the cache's columns (default: prompt + max_new), grown when guesses need room."""
    import torch

    device = input_ids.device
    width = input_ids.shape[1]
    capacity = capacity or width + max_new
    mask = attention
    prompts = ([input_ids[r][attention[r].bool()].tolist() for r in range(input_ids.shape[0])]
               if drafter is not None else [])
    with torch.inference_mode():
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = forward(input_ids[:, C:], mask, positions[:, C:], cache, C, last_only=True)[:, -1:]
        alive = list(range(input_ids.shape[0]))
        tokens: list[list[int]] = [[] for _ in alive]
        done: list[bool] = [False] * len(alive)
        drafts: list[list[int]] = [[] for _ in alive]
        cur = width  # next free cache column
        step_width = 0  # columns the last step added
        grows = 0
        while True:
            keep = []
            for j, row in enumerate(alive):
                got = accept(logits[j, :1 + len(drafts[j])], drafts[j], temperature, top_p)
                if step_width and len(got) < 1 + len(drafts[j]):
                    # Guesses after the accepted ones are not this row's text: mask their columns.
                    mask[j, cur - step_width + len(got):cur] = 0
                for t in got:
                    tokens[row].append(t)
                    if t in stop_ids or (stopped is not None and stopped(tokens[row])):
                        done[row] = True
                        break
                    if len(tokens[row]) >= max_new:
                        break
                else:
                    keep.append(j)
            finished = [j for j in range(len(alive)) if j not in set(keep)]
            if on_finish is not None:
                for j in finished:
                    # The reply tokens fed so far sit at the row's live columns after the prompt, in order.
                    fed = (torch.nonzero(mask[j, width:]).squeeze(1) + width)[:len(tokens[alive[j]])]
                    on_finish(alive[j], cache, j, tokens[alive[j]][:len(fed)], fed)
            if not keep:
                break
            if len(keep) < len(alive):
                order = drop_rows(cache, finished)
                mask = mask.index_select(0, torch.tensor(order, device=device))
                alive = [alive[j] for j in order]
            # Guesses per row within the step's token budget, and room for them: after this step
            # every row must still fit one token per column.
            need = max(max_new - len(tokens[r]) for r in alive)
            k = min(getattr(drafter, "k", 8), draft_tokens // len(alive) - 1) if drafter is not None else 0
            if k > 0 and need > 1 and capacity - cur - need < k and grows < MAX_GROWS:
                extra = need * k // 3 + k  # ~3 tokens kept per step of 1 + k columns
                grow(cache, extra)
                capacity, grows = capacity + extra, grows + 1
            k = min(k, capacity - cur - need)
            drafts = [drafter(prompts[r] + tokens[r], k) if k > 0 else [] for r in alive]
            step_width = 1 + max(len(d) for d in drafts)
            ids = torch.zeros((len(alive), step_width), dtype=torch.long)
            new_mask = torch.zeros((len(alive), step_width), dtype=mask.dtype)
            for j, r in enumerate(alive):
                row = [tokens[r][-1], *drafts[j]]
                ids[j, :len(row)] = torch.tensor(row)
                new_mask[j, :len(row)] = 1
            mask = torch.cat([mask, new_mask.to(device)], dim=1)
            positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -step_width:]
            logits = forward(ids.to(device), mask, positions, cache, cur)
            cur += step_width
    return [(tokens[r], done[r]) for r in range(len(tokens))]
