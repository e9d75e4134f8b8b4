"""Reuse of earlier prompts' KV caches in the engine: multi-turn rollouts re-send a conversation
that only grew at its end, so each turn would otherwise prefill the whole conversation again.

`PrefixStore` keeps the per-layer keys/values of recent prompts (one entry per prompt, least
recently used dropped first). A new prompt takes the entry sharing its longest prefix; the batch is
laid out as `[pad | cached | pad | new]` per row, so the attention mask's cumulative sum gives
every token its true position and only the new tokens are computed.

The engine fills the store in three steps before a batched decode: prefixes the batch shares
(`shared_prefixes`), then each row's own new tokens in groups of similar length
(`prefill_groups`), so the decode itself only decodes.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

MIN_REUSE = 16
"""Shorter shared prefixes are recomputed (not worth the copies)."""


@dataclass
class Hit:
    """The cached prefix a prompt can reuse."""

    length: int
    """Tokens reused (0: none)."""
    kv: list[tuple[Any, Any]] | None
    """Per layer (keys, values), each [kv_heads, tokens, head_dim]."""
    key: bytes | None


class PrefixStore:
    """Recent prompts' KV caches, looked up by longest common token prefix."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.entries: OrderedDict[bytes, tuple[np.ndarray, list[tuple[Any, Any]]]] = OrderedDict()
        self.reused_tokens = 0
        self.computed_tokens = 0

    def lookup(self, ids: list[int]) -> Hit:
        if not self.entries or len(ids) <= MIN_REUSE:
            return Hit(0, None, None)
        query = np.asarray(ids, dtype=np.int64)
        best, best_key = 0, None
        for key, (cached, _) in self.entries.items():
            n = min(len(cached), len(query) - 1)  # keep at least one new token to produce logits
            if n <= best:
                continue
            diff = np.flatnonzero(cached[:n] != query[:n])
            lcp = int(diff[0]) if diff.size else n
            if lcp > best:
                best, best_key = lcp, key
        if best < MIN_REUSE or best_key is None:
            return Hit(0, None, None)
        self.entries.move_to_end(best_key)
        return Hit(best, self.entries[best_key][1], best_key)

    def put(self, ids: list[int], kv: list[tuple[Any, Any]], replaces: bytes | None = None) -> None:
        if self.max_entries <= 0:
            return
        arr = np.asarray(ids, dtype=np.int64)
        key = arr.tobytes()
        old = self.entries.get(replaces) if replaces is not None and replaces != key else None
        if old is not None and len(old[0]) < len(arr) and np.array_equal(old[0], arr[:len(old[0])]):
            # The new prompt extends it: the old entry is redundant. (A hit may also be another
            # prompt that only shares a prefix with this one: that entry stays.)
            self.entries.pop(replaces, None)
        self.entries[key] = (arr, kv)
        self.entries.move_to_end(key)
        while len(self.entries) > self.max_entries:
            self.entries.popitem(last=False)

    def keep(self, prompt: list[int], hit: Hit, kv: list[tuple[Any, Any]], reply: list[int] | None = None) -> None:
        """Put `prompt`'s keys/values `kv` (followed by those of its `reply` tokens) in place of the
        entry it was extended from, and count reused vs computed tokens."""
        self.put([*prompt, *(reply or [])], kv, replaces=hit.key)
        self.reused_tokens += hit.length
        self.computed_tokens += len(prompt) - hit.length


def shared_prefixes(prompts: list[list[int]], store: PrefixStore) -> list[list[int]]:
    """Prefixes that several prompts of a batch share and the store does not hold yet.

    Two levels: the prefix common to the whole batch (system prompt and tools), then the longer
    prefixes shared by groups (k samples of one task have the same prompt at their first turn).
    Each is cut one token short of the shorter prompt, which must still compute a token.
    """
    if len(prompts) < 2:
        return []
    order = sorted(range(len(prompts)), key=lambda i: prompts[i])

    def lcp(a: list[int], b: list[int]) -> int:
        n = min(len(a), len(b)) - 1
        if n <= 0:
            return 0
        x, y = np.asarray(a[:n]), np.asarray(b[:n])
        diff = np.flatnonzero(x != y)
        return int(diff[0]) if diff.size else n

    pairs = [(order[j], lcp(prompts[order[j]], prompts[order[j + 1]])) for j in range(len(order) - 1)]
    common = min(n for _, n in pairs)
    levels: list[list[list[int]]] = [[], []]
    seen: set[bytes] = set()
    for i, n in [(order[0], common), *pairs]:
        if n < MIN_REUSE:
            continue
        prefix = prompts[i][:n]
        key = np.asarray(prefix, dtype=np.int64).tobytes()
        if key in seen or store.lookup([*prefix, -1]).length >= n - MIN_REUSE:
            continue
        seen.add(key)
        levels[0 if n == common else 1].append(prefix)
    return [p for level in levels for p in level]


def prefill_groups(cached: list[int], new: list[int], slack: float = 0.25, most: int = 16) -> list[list[int]]:
    """Rows (indices) to prefill together: similar new lengths and cached lengths, so padding
    adds at most `slack` to the work of a group (new tokens x attended width), `most` rows each."""
    order = sorted(range(len(new)), key=lambda i: (new[i], cached[i]))
    groups: list[list[int]] = []
    for i in order:
        g = groups[-1] if groups else None
        if g is not None and len(g) < most:
            rows = [*g, i]
            real = sum(new[j] * (cached[j] + new[j]) for j in rows)
            padded = len(rows) * max(new[j] for j in rows) * (max(cached[j] for j in rows) + max(new[j] for j in rows))
            if padded <= (1 + slack) * real:
                g.append(i)
                continue
        groups.append([i])
    return groups


class ColumnCache:
    """Keys and values per layer ([batch, kv_heads, columns, head_dim], `cache.layers[i].keys`, as
    transformers' caches) allocated without zeroing, for clawloop.policy.engine.fast_forward: it
    only reads columns that were written before (reused prefixes, prefills, decode steps) or zeroed
    here (the padding before a row's shorter reused prefix). Zeroing a whole StaticCache is a
    measurable share of a wide call (benchmarks/perf/README.md), and the columns of rows that
    finish early are never needed; transformers' attention reads every column of its cache, so
    the hf forward keeps StaticCache."""

    zeroed = False
    """Whether unwritten columns hold zeros (clawloop.policy.engine.decode_loop.grow keeps what it finds)."""

    def __init__(self, model_config: Any, batch: int, columns: int, dtype: Any, device: Any) -> None:
        kv = model_config.num_key_value_heads
        dim = getattr(model_config, "head_dim", None) or model_config.hidden_size // model_config.num_attention_heads
        self.layers = [_Columns(torch.empty((batch, kv, columns, dim), dtype=dtype, device=device),
                                torch.empty((batch, kv, columns, dim), dtype=dtype, device=device))
                       for _ in range(model_config.num_hidden_layers)]


@dataclass
class _Columns:
    keys: Any
    values: Any


def layout(prompts: list[list[int]], hits: list[Hit], pad: int, model_config: Any, device: Any,
           dtype: Any, max_new: int, zeroed: bool = True) -> tuple[Any, Any, Any, int]:
    """input_ids, attention_mask, a cache holding the reused prefixes, and the cached width C.

    The cache is sized for the whole generation: a StaticCache (a DynamicCache re-concatenates
    every layer's keys and values at each decoded token: benchmarks/perf/README.md), or with
    `zeroed=False` a ColumnCache (for clawloop.policy.engine.fast_forward only).
    """
    from transformers import StaticCache

    c = [h.length for h in hits]
    u = [len(p) - ci for p, ci in zip(prompts, c, strict=True)]
    C, U = max(c), max(u)
    ids = torch.full((len(prompts), C + U), pad, dtype=torch.long)
    mask = torch.zeros((len(prompts), C + U), dtype=torch.long)
    for i, (p, ci, ui) in enumerate(zip(prompts, c, u, strict=True)):
        if ci:
            ids[i, C - ci:C] = torch.tensor(p[:ci])
            mask[i, C - ci:C] = 1
        ids[i, C + U - ui:] = torch.tensor(p[ci:])
        mask[i, C + U - ui:] = 1
    if not zeroed:
        cache = ColumnCache(model_config, len(prompts), C + U + max_new, dtype, device)
    else:
        cache = StaticCache(config=model_config, max_cache_len=C + U + max_new)
        ref = next((h.kv for h in hits if h.kv is not None), None)
        for layer, cache_layer in enumerate(cache.layers if C else []):
            k0 = ref[layer][0]
            # Allocate the layer's zeroed tensors now, so each hit is copied straight into its columns.
            cache_layer.lazy_initialization(k0.new_empty((len(prompts), k0.shape[0], 0, k0.shape[2]), dtype=dtype,
                                                         device=device),
                                            k0.new_empty((len(prompts), k0.shape[0], 0, ref[layer][1].shape[2]),
                                                         dtype=dtype, device=device))
            cache_layer.cumulative_length.fill_(C)  # transformers' forward writes from there on
    for n, layer in enumerate(cache.layers if C else []):
        for i, h in enumerate(hits):
            reused = h.length if h.kv is not None else 0
            if not zeroed and reused < C:  # padding before a shorter prefix is masked out but read: no NaN there
                layer.keys[i, :, :C - reused] = 0
                layer.values[i, :, :C - reused] = 0
            if reused:
                layer.keys[i, :, C - reused:C] = h.kv[n][0][:, :reused]
                layer.values[i, :, C - reused:C] = h.kv[n][1][:, :reused]
    return ids.to(device), mask.to(device), cache, C


def extract(cache: Any, row: int, cached: int, new: int, C: int, U: int, more: Any = None) -> list[tuple[Any, Any]]:
    """Row `row`'s prompt keys/values from the cache generate returned, pads dropped, then those
    of cache columns `more` (a reply's tokens) when given."""
    idx = torch.cat([torch.arange(C - cached, C), torch.arange(C + U - new, C + U),
                     *([more.cpu()] if more is not None else [])])
    out = []
    for layer in cache.layers:
        idx_d = idx.to(layer.keys.device)
        # index_select copies: the entry owns its memory, not a view of the batch's cache.
        out.append((layer.keys[row].index_select(1, idx_d), layer.values[row].index_select(1, idx_d)))
    return out
