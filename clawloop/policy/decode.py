"""HFPolicy's decode loop: a batch whose finished rows leave it.

`model.generate` decodes every row until the longest reply ends, so a batch of 32 replies of
~40 tokens with one of 96 computes 32 x 96 rows. Shell-agent replies are short tool calls of
uneven length; measured on first-turn shell-core prompts, more than half of generate's decode
rows were finished ones. This loop samples like generate (temperature, then top-p; greedy at
temperature 0), and drops a row from the batch and its KV cache as soon as it emits a stop token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _cache_kwarg() -> str:
    """transformers renamed the forward's `past_key_values` to `cache` (5.2x); use what it has."""
    import inspect

    from transformers import LlamaForCausalLM

    return "cache" if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters else "past_key_values"


def sample_next(logits: Any, temperature: float, top_p: float) -> Any:
    """One token per row: argmax at temperature 0, else temperature then nucleus sampling
    (the smallest set of tokens whose probability reaches top_p, as transformers does)."""
    import torch

    if temperature <= 0:
        return logits.argmax(-1)
    logits = logits.float() / temperature
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=False)
        cum = sorted_logits.softmax(-1).cumsum(-1)
        remove = cum <= (1 - top_p)
        remove[..., -1:] = False  # keep at least the most likely token
        logits = logits.masked_fill(remove.scatter(1, order, remove), float("-inf"))
    return torch.multinomial(logits.softmax(-1), 1).squeeze(1)


def select_rows(cache: Any, keep: Any) -> None:
    """Keep only batch rows `keep` of a StaticCache/DynamicCache, in place."""
    for layer in cache.layers:
        layer.keys = layer.keys.index_select(0, keep.to(layer.keys.device))
        layer.values = layer.values.index_select(0, keep.to(layer.values.device))
        if hasattr(layer, "max_batch_size"):
            layer.max_batch_size = int(keep.numel())


def decode(model: Any, input_ids: Any, attention: Any, cache: Any, C: int, *, max_new: int,
           stop_ids: set[int], temperature: float, top_p: float,
           on_finish: Callable[[int, Any, int], None] | None = None,
           stopped: Callable[[list[int]], bool] | None = None) -> list[tuple[list[int], bool]]:
    """Generate up to `max_new` tokens per row after `input_ids` (columns from C on are not in
    `cache` yet). Returns per row (tokens, stopped), the stop token included. `on_finish(row,
    cache, index)` runs before a finished row leaves the cache (`index`: its row there now), so the
    caller can keep its prompt's keys/values; `stopped(tokens)` ends a row early (stop strings)."""
    import torch

    _CACHE = _cache_kwarg()  # noqa: N806
    device = input_ids.device
    width = input_ids.shape[1]
    mask = attention
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        out = model(input_ids=input_ids[:, C:], attention_mask=mask, position_ids=positions[:, C:],
                    cache_position=torch.arange(C, width, device=device), **{_CACHE: cache},
                    use_cache=True, logits_to_keep=1)
        logits = out.logits[:, -1]
        alive = list(range(input_ids.shape[0]))
        last = positions[:, -1]
        tokens: list[list[int]] = [[] for _ in alive]
        done: list[bool] = [False] * len(alive)
        for step in range(max_new):
            nxt = sample_next(logits, temperature, top_p)
            keep = []
            for j, row in enumerate(alive):
                t = int(nxt[j])
                tokens[row].append(t)
                if t in stop_ids or (stopped is not None and stopped(tokens[row])):
                    done[row] = True
                elif step + 1 < max_new:
                    keep.append(j)
            finished = [j for j in range(len(alive)) if j not in set(keep)]
            if on_finish is not None:
                for j in finished:
                    on_finish(alive[j], cache, j)
            if not keep:
                break
            if len(keep) < len(alive):
                idx = torch.tensor(keep, device=device)
                select_rows(cache, idx)
                mask, last, nxt = mask.index_select(0, idx), last.index_select(0, idx), nxt.index_select(0, idx)
                alive = [alive[j] for j in keep]
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            last = last + 1
            out = model(input_ids=nxt[:, None], attention_mask=mask, position_ids=last[:, None],
                        cache_position=torch.tensor([width + step], device=device),
                        use_cache=True, **{_CACHE: cache})
            logits = out.logits[:, -1]
    return [(tokens[r], done[r]) for r in range(len(tokens))]
