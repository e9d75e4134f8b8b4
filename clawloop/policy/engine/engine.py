"""The decode engine: batches of prompt token ids in, reply token ids out.

HFPolicy renders and tokenizes conversations; the Engine computes the replies of one causal LM:
its forward pass (transformers', or the fast one, with int8 Linear layers or not), the prefix
cache reused across turns (prefix_cache), the guessers (drafter) and the decode loop
(decode_loop), or transformers' generate (the reference). It imports torch: HFPolicy imports it
when it loads a model.
"""

from __future__ import annotations

import inspect
import itertools
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from clawloop.config.engine import EngineConfig
from clawloop.errors import ClawloopError
from clawloop.policy.engine.decode_loop import DecodeBatch, Decoding, decode
from clawloop.policy.engine.drafter import Drafter, tool_call_snippets
from clawloop.policy.engine.fast_forward import FastLM, supports
from clawloop.policy.engine.int8_linear import quantize_linears
from clawloop.policy.engine.prefix_cache import (
    MIN_REUSE,
    Hit,
    PrefixStore,
    extract,
    layout,
    prefill_groups,
    shared_prefixes,
)
from clawloop.policy.types import END_OF_TURN, SamplingParams, cut_at_stop


def cache_kwarg() -> str:
    """transformers renamed `past_key_values` to `cache` (5.2x), in the forward's arguments and
    generate's output alike; use what it has."""
    from transformers import LlamaForCausalLM

    return "cache" if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters else "past_key_values"


def hf_forward(model: Any) -> Callable[..., Any]:
    """`forward(ids, mask, positions, cache, start, last_only)` -> logits [B, T, vocab] through a
    transformers model (fast_forward.FastLM has the same signature)."""
    kwarg = cache_kwarg()

    def forward(ids: Any, mask: Any, positions: Any, cache: Any, start: int, last_only: bool = False) -> Any:
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                    cache_position=torch.arange(start, start + ids.shape[1], device=ids.device),
                    logits_to_keep=1 if last_only else 0, **{kwarg: cache})
        return out.logits

    return forward


def stop_ids(model: Any, tokenizer: Any) -> list[int]:
    """Token ids that end a reply: the end of turn, the tokenizer's eos, the generation config's."""
    ids = []
    for tok in (END_OF_TURN, tokenizer.eos_token):
        if tok is None:
            continue
        tid = tokenizer.convert_tokens_to_ids(tok)
        if isinstance(tid, int) and tid != tokenizer.unk_token_id and tid not in ids:
            ids.append(tid)
    gen_eos = getattr(model.generation_config, "eos_token_id", None)
    for tid in gen_eos if isinstance(gen_eos, list) else [gen_eos]:
        if isinstance(tid, int) and tid not in ids:
            ids.append(tid)
    return ids


@dataclass
class _Batch:
    """One forward batch: its prompts, the cached prefixes they reuse, and their layout."""

    prompts: list[list[int]]
    hits: list[Hit]
    ids: Any
    mask: Any
    cache: Any
    cached: int
    """Columns before this one hold reused prefixes."""
    max_new: int = 0


class Engine:
    """Reply token ids of one causal LM (already on its device) for batches of prompt token ids.

    `tokenizer` gives the pad and stop tokens, stop strings' text and the tool-call snippets the
    drafter guesses from; `max_context` bounds prompt + reply; `owns_model`: the model is this
    engine's own copy (int8 converts it in place)."""

    def __init__(self, model: Any, tokenizer: Any, config: EngineConfig, *, max_context: int,
                 owns_model: bool = True) -> None:
        self.model, self.tokenizer, self.config = model, tokenizer, config
        self.max_context = max_context
        self.device = model.device
        on_cpu = self.device.type == "cpu"
        self.threads = config.threads
        if self.threads is None and on_cpu:
            self.threads = max(1, (os.cpu_count() or 2) // 2)
        self.forward, self.fast = self._pick_forward(owns_model)
        self.stop_ids = stop_ids(model, tokenizer)
        entries = config.kv_reuse_entries
        if entries is None:
            entries = 128 if on_cpu else 0
        self.prefix_store = PrefixStore(entries) if entries > 0 else None
        self.draft_tokens = config.speculate_tokens or (72 if config.quantize == "int8" else 24)
        self._calls = itertools.count()
        self._lock = threading.Lock()
        self._drafters: dict[str, Drafter] = {}

    def _pick_forward(self, owns_model: bool) -> tuple[Callable[..., Any], bool]:
        """The forward pass `config.forward` asks for, and whether it is the fast one."""
        c, device = self.config, self.device.type
        why = None
        if c.forward != "hf":
            why = (supports(self.model) or (None if device == "cpu" else f"device {device}")
                   or (None if c.decode == "loop" else "decode generate"))
            if why is not None and c.forward == "fast":
                raise ClawloopError(f"engine.forward fast cannot run {why} (engine.forward hf runs any model)")
        if c.forward != "hf" and why is None:  # (only with the decode loop)
            return FastLM(self.model, int8=c.quantize == "int8"), True
        if c.quantize == "int8":
            if device != "cpu" or not owns_model:
                raise ClawloopError("engine.quantize int8 converts a CPU policy's own copy of the model: "
                                    f"not on {device}, not on a model passed in")
            quantize_linears(self.model)
        return hf_forward(self.model), False

    def drafter(self, tools: list[dict[str, Any]] | None) -> Drafter | None:
        """The decode loop's guesser for replies to prompts with these tools (None: off). One per
        set of tools: it remembers their replies."""
        if not self.config.speculate or self.config.decode != "loop":
            return None
        key = json.dumps(tools, sort_keys=True)
        if key not in self._drafters:
            self._drafters[key] = Drafter(self.config.speculate, tool_call_snippets(self.tokenizer, tools))
        return self._drafters[key]

    def generate(self, prompts: list[list[int]], sampling: SamplingParams,
                 tools: list[dict[str, Any]] | None = None) -> list[list[int]]:
        """Each prompt's reply tokens, ending with a stop token where the reply ended; every prompt
        must leave room for one token in `max_context`. `tools`: the drafter guesses their calls."""
        # Sorted by length so batches pad little; split at max_batch_size.
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        replies: list[list[int]] = [[] for _ in prompts]
        size = self.config.max_batch_size
        prev = torch.get_num_threads()
        with self._lock:
            if self.threads:  # set per call: torch's thread count is global to the process
                torch.set_num_threads(self.threads)
            try:
                for start in range(0, len(order), size):
                    chunk = order[start:start + size]
                    for i, new in zip(chunk, self._generate_batch([prompts[i] for i in chunk], sampling, tools),
                                      strict=True):
                        replies[i] = new
            finally:
                torch.set_num_threads(prev)
        return replies

    def _layout(self, prompts: list[list[int]], max_new: int) -> _Batch:
        """`prompts` laid out over what the prefix store holds, with room for `max_new` tokens."""
        store = self.prefix_store
        hits = [store.lookup(p) if store else Hit(0, None, None) for p in prompts]
        ids, mask, cache, cached = layout(prompts, hits, self.tokenizer.pad_token_id, self.model.config,
                                          self.device, self.model.dtype, max_new, zeroed=not self.fast)
        return _Batch(prompts, hits, ids, mask, cache, cached, max_new)

    def _keep(self, batch: _Batch, row: int, cache: Any, index: int | None = None,
              reply: list[int] | None = None, columns: Any = None) -> None:
        """Put prompt `row`'s keys/values (row `index` of `cache`, `row` by default) into the prefix
        store, followed by those of its `reply` tokens at cache `columns`."""
        if self.prefix_store is None:
            return
        prompt, hit = batch.prompts[row], batch.hits[row]
        kv = extract(cache, row if index is None else index, hit.length, len(prompt) - hit.length, batch.cached,
                     batch.ids.shape[1] - batch.cached, columns)
        self.prefix_store.keep(prompt, hit, kv, reply)

    def _prefill_shared(self, prompts: list[list[int]]) -> None:
        """Compute once the prefixes several prompts share, so each row reuses them."""
        assert self.prefix_store is not None
        prefixes = shared_prefixes(prompts, self.prefix_store)
        common = [p for p in prefixes if len(p) == len(prefixes[0])][:1] if prefixes else []
        self._prefill(common)
        self._prefill([p for p in prefixes if p not in common])

    def _prefill_rows(self, prompts: list[list[int]]) -> None:
        """Compute each prompt's own new tokens (all but its last) in groups of rows of similar
        length, so the batched decode starts from a full cache: one padded prefill over a whole
        batch computed every row up to the longest one, 2-3x the real tokens of a turn."""
        store = self.prefix_store
        assert store is not None
        todo = [(p[:-1], store.lookup(p).length) for p in prompts]
        todo = [(p, c) for p, c in todo if len(p) - c >= MIN_REUSE]
        for group in prefill_groups([c for _, c in todo], [len(p) - c for p, c in todo]):
            self._prefill([todo[i][0] for i in group])

    def _prefill(self, prompts: list[list[int]]) -> None:
        """One forward over `prompts` (reusing what the store holds) whose KV go to the store."""
        if not prompts or self.prefix_store is None:
            return
        batch = self._layout(prompts, 0)
        # Only the uncached columns go in; positions follow the mask, as in generate.
        positions = (batch.mask.cumsum(-1) - 1).clamp(min=0)[:, batch.cached:]
        with torch.inference_mode():
            self.forward(batch.ids[:, batch.cached:], batch.mask, positions, batch.cache, batch.cached,
                         last_only=True)
        for row in range(len(prompts)):
            self._keep(batch, row, batch.cache)

    def _generate_batch(self, prompts: list[list[int]], sampling: SamplingParams,
                        tools: list[dict[str, Any]] | None) -> list[list[int]]:
        if self.prefix_store is not None:
            self._prefill_shared(prompts)
            if len(prompts) > 1:
                self._prefill_rows(prompts)
        max_new = max(1, min(sampling.max_new_tokens, self.max_context - max(len(p) for p in prompts)))
        batch = self._layout(prompts, max_new)
        if self.config.decode == "loop":  # (it grows the cache when guesses need room)
            return self._decode_loop(batch, sampling, self.drafter(tools))
        return self._transformers_generate(batch, sampling)

    def _seed(self, sampling: SamplingParams) -> None:
        """Seed torch per call, so a seeded rollout samples the same replies again."""
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed * 1_000_003 + next(self._calls))

    def _stopped(self, sampling: SamplingParams) -> Callable[[list[int]], bool] | None:
        """Whether a reply's text reached one of the stop strings (None: there are none)."""
        if not sampling.stop:
            return None
        return lambda tokens: cut_at_stop(self.tokenizer.decode(tokens, skip_special_tokens=False), sampling.stop)[1]

    def _decode_loop(self, batch: _Batch, sampling: SamplingParams,
                     drafter: Callable[[list[int], int], list[int]] | None) -> list[list[int]]:
        def keep(row: int, cache: Any, index: int, fed: list[int], columns: Any) -> None:
            # The reply's keys/values too: the next turn's prompt re-renders the reply, so a
            # multi-turn episode prefills only what the environment added (where the template's
            # rendering of the reply tokenizes as the model wrote it).
            self._keep(batch, row, cache, index, fed, columns)

        self._seed(sampling)
        how = Decoding(batch.max_new, set(self.stop_ids), sampling.temperature, sampling.top_p,
                       self._stopped(sampling), drafter, self.draft_tokens)
        rows = decode(self.forward, DecodeBatch(batch.ids, batch.mask, batch.cache, batch.cached), how, keep)
        if isinstance(drafter, Drafter):  # the next replies are guessed from these ones' tokens too
            for new, _ in rows:
                drafter.remember(new)
        return [new for new, _ in rows]

    def _transformers_generate(self, batch: _Batch, sampling: SamplingParams) -> list[list[int]]:
        """transformers' generate over the batch: the reference the decode loop is checked against."""
        kwargs: dict[str, Any] = {
            "max_new_tokens": batch.max_new, "eos_token_id": self.stop_ids, "pad_token_id": self.tokenizer.pad_token_id,
            "use_cache": True, "do_sample": sampling.temperature > 0, "return_dict_in_generate": True,
        }
        kwarg = cache_kwarg()
        kwargs[kwarg] = batch.cache
        if sampling.temperature > 0:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        if sampling.stop:
            kwargs.update(stop_strings=sampling.stop, tokenizer=self.tokenizer)
        self._seed(sampling)
        with torch.inference_mode():
            out = self.model.generate(input_ids=batch.ids, attention_mask=batch.mask, **kwargs)
        new_cache = getattr(out, kwarg, None)
        stops, width = set(self.stop_ids), batch.ids.shape[1]
        replies = []
        for row in range(len(batch.prompts)):
            if new_cache is not None:
                self._keep(batch, row, new_cache)
            new = out.sequences[row, width:].tolist()
            n = next((j + 1 for j, t in enumerate(new) if t in stops), len(new))
            replies.append(new[:n])
        return replies
