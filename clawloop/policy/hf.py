"""The transformers backend: a causal LM with left-padded batches, a KV cache reused across turns
(clawloop.policy.kv_reuse) and its own decode loop (clawloop.policy.decode).

Its own module because it is the one backend whose generation runs in this process (torch and
transformers are imported inside the class); `clawloop.policy.load` builds it from a spec.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from clawloop.errors import ClawloopError
from clawloop.policy.types import END_OF_TURN, Conversation, Generation, SamplingParams
from clawloop.policy.types import cut_at_stop as _cut_at_stop


def _cache_kwarg() -> str:
    """transformers renamed generate's `past_key_values` to `cache` (5.2x); use what it has."""
    from transformers.generation.utils import GenerateDecoderOnlyOutput

    return "cache" if "cache" in GenerateDecoderOnlyOutput.__dataclass_fields__ else "past_key_values"


def _keep(store: Any, prompt: list[int], hit: Any, cache: Any, row: int, C: int, width: int,
          reply: list[int] | None = None, columns: Any = None) -> None:
    """Put `prompt`'s KV (row `row` of `cache`, laid out from column C to `width`) into the store,
    followed by the `reply` tokens' KV at cache `columns`, in place of the entry it was extended
    from, and count reused vs computed tokens."""
    from clawloop.policy.kv_reuse import extract

    new = len(prompt) - hit.length
    kv = extract(cache, row, hit.length, new, C, width - C, columns)
    store.put([*prompt, *(reply or [])], kv, replaces=hit.key)
    store.reused_tokens += hit.length
    store.computed_tokens += new


class HFPolicyConfig(BaseModel):
    """Options of the transformers backend."""

    model_config = ConfigDict(extra="forbid")

    device: str = "auto"
    """"auto" (cuda when available, else cpu), "cpu", "cuda", "cuda:1", ..."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """Weights dtype; "auto" is bfloat16 on GPU and float32 on CPU."""
    max_batch_size: int = Field(64, gt=0)
    """Most conversations in one forward batch (larger batches are split)."""
    max_context_tokens: int | None = None
    """Prompt + reply limit; None reads max_position_embeddings from the model config."""
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Extra variables for the chat template, e.g. {"enable_thinking": false} for Qwen3."""
    kv_reuse_entries: int | None = Field(None, ge=0)
    """Prompts whose KV cache is kept for the next turn (clawloop.policy.kv_reuse); 0 turns reuse
    off; None: 128 on CPU, off on GPU (use vLLM's prefix caching there)."""
    threads: int | None = None
    """torch CPU threads; None: half the cores on CPU (sandboxes need the rest; oversubscribed
    OpenMP threads made a tiny model 10x slower here), torch's default on GPU."""
    decode: Literal["loop", "generate"] = "loop"
    """loop: clawloop.policy.decode, finished rows leave the batch; generate: transformers'
    generate, which decodes every row until the longest reply ends (the reference)."""
    engine: Literal["hf", "fast", "auto"] = "hf"
    """Forward pass of the decode loop: hf, transformers' own (the reference); fast,
    clawloop.policy.fastlm (CPU, Llama, Qwen2 and Qwen3 decoders: fused projections, attention over the
    filled cache only); auto, fast where it can run, else hf."""
    speculate: int = Field(0, ge=0)
    """Most guessed tokens checked per row and decode step (clawloop.policy.draft: prompt lookup
    and the chat template's tool-call text); replies stay the model's own. 0: off."""
    speculate_tokens: int | None = Field(None, ge=2)
    """Most tokens one decode step feeds, guesses included: each of R rows gets
    min(speculate, speculate_tokens // R - 1) guesses, none while R > speculate_tokens / 2 (a wide
    step has no spare compute). None: 24 with fp32 weights, 72 with int8 (measured at batch 8 and
    32 on this project's 2-core box: fp32 8 rows x 3 tokens beat 2 x 9 and 16 x 2)."""
    quantize: Literal["none", "int8"] = "none"
    """int8: Linear layers as int8 x int8 products with per-channel weight and per-token
    activation scales (clawloop.policy.int8), CPU only, rollouts only: the checkpoint stays fp32."""


class HFPolicy:
    """A transformers causal LM: left-padded batches, KV cache, stop at the end of turn."""

    def __init__(self, model_dir: str | Path, config: HFPolicyConfig | None = None, *,
                 policy_id: str | None = None, model: Any = None, tokenizer: Any = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        self.config = config or HFPolicyConfig()
        self.model_dir = Path(model_dir)
        self.policy_id = policy_id or self.model_dir.name
        dev = self.config.device
        if dev == "auto":
            dev = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(dev)
        threads = self.config.threads
        if threads is None and self.device.type == "cpu":
            threads = max(1, (os.cpu_count() or 2) // 2)
        self.threads = threads
        dtype = self.config.dtype
        if dtype == "auto":
            dtype = "bfloat16" if self.device.type == "cuda" else "float32"
        try:
            self.tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(model_dir))
            self.model = model or AutoModelForCausalLM.from_pretrained(
                str(model_dir), dtype=getattr(torch, dtype))
        except OSError as e:
            raise ClawloopError(f"{model_dir}: cannot load model ({e})") from None
        self.model.to(self.device).eval()
        from clawloop.policy.decode import hf_forward

        self.forward = hf_forward(self.model)
        fast_why = None
        if self.config.engine != "hf":
            from clawloop.policy.fastlm import FastLM, supports

            fast_why = (supports(self.model) or (None if self.device.type == "cpu" else f"device {self.device.type}")
                        or (None if self.config.decode == "loop" else "decode generate"))
            if fast_why is not None and self.config.engine == "fast":
                raise ClawloopError(f"{model_dir}: hf engine fast cannot run {fast_why} (engine: hf runs any model)")
        self._fast = self.config.engine != "hf" and fast_why is None  # (only with the decode loop)
        if self._fast:
            self.forward = FastLM(self.model, int8=self.config.quantize == "int8")
        elif self.config.quantize == "int8":
            if self.device.type != "cpu" or model is not None:
                raise ClawloopError("hf quantize int8 converts a CPU policy's own copy of the model: "
                                    f"not on {self.device.type}, not on a model passed in")
            from clawloop.policy.int8 import quantize_linears

            quantize_linears(self.model)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.stop_ids = self._stop_ids()
        from clawloop.policy.kv_reuse import PrefixStore

        entries = self.config.kv_reuse_entries
        if entries is None:
            entries = 128 if self.device.type == "cpu" else 0
        self.prefix_store = PrefixStore(entries) if entries > 0 else None
        self.max_context = self.config.max_context_tokens or int(
            getattr(self.model.config, "max_position_embeddings", 32768))
        self._calls = itertools.count()
        self._lock = threading.Lock()
        self._drafters: dict[str, Any] = {}

    def _stop_ids(self) -> list[int]:
        ids = []
        for tok in (END_OF_TURN, self.tokenizer.eos_token):
            if tok is None:
                continue
            tid = self.tokenizer.convert_tokens_to_ids(tok)
            if isinstance(tid, int) and tid != self.tokenizer.unk_token_id and tid not in ids:
                ids.append(tid)
        gen_eos = getattr(self.model.generation_config, "eos_token_id", None)
        for tid in gen_eos if isinstance(gen_eos, list) else [gen_eos]:
            if isinstance(tid, int) and tid not in ids:
                ids.append(tid)
        return ids

    def render(self, conversation: Conversation, tools: list[dict[str, Any]] | None) -> str:
        """The prompt text of one conversation, ending with the assistant header."""
        return self.tokenizer.apply_chat_template(
            conversation, tools=tools, tokenize=False, add_generation_prompt=True,
            **self.config.chat_template_kwargs)

    def generate(self, conversations: Sequence[Conversation], sampling: SamplingParams,
                 *, tools: list[dict[str, Any]] | None = None) -> list[Generation]:
        prompts = [self.tokenizer(self.render(c, tools), add_special_tokens=False)["input_ids"]
                   for c in conversations]
        out: list[Generation | None] = [None] * len(prompts)
        todo = []
        for i, ids in enumerate(prompts):
            if len(ids) + 1 > self.max_context:
                out[i] = Generation("", len(ids), 0, "context", tuple(ids), ())
            else:
                todo.append(i)
        # Sort by length so batches pad little; split at max_batch_size.
        todo.sort(key=lambda i: len(prompts[i]))
        import torch

        prev = torch.get_num_threads()
        with self._lock:
            if self.threads:  # set per call: torch's thread count is global to the process
                torch.set_num_threads(self.threads)
            try:
                for start in range(0, len(todo), self.config.max_batch_size):
                    chunk = todo[start:start + self.config.max_batch_size]
                    gens = self._generate_batch([prompts[i] for i in chunk], sampling, tools)
                    for i, g in zip(chunk, gens, strict=True):
                        out[i] = g
            finally:
                torch.set_num_threads(prev)
        return [g for g in out if g is not None]

    def _prefill_shared(self, prompts: list[list[int]]) -> None:
        """Compute once the prefixes several prompts share, so each row reuses them."""
        from clawloop.policy.kv_reuse import shared_prefixes

        assert self.prefix_store is not None
        prefixes = shared_prefixes(prompts, self.prefix_store)
        common = [p for p in prefixes if len(p) == len(prefixes[0])][:1] if prefixes else []
        self._prefill(common)
        self._prefill([p for p in prefixes if p not in common])

    def _prefill_rows(self, prompts: list[list[int]]) -> None:
        """Compute each prompt's own new tokens (all but its last) in groups of rows of similar
        length, so the batched generate starts from a full cache and only decodes. One padded
        prefill over a whole batch computed every row up to the longest one: on CPU, 2-3x the
        real tokens of a turn, which undid the batching gain (benchmarks/perf/rollout.py)."""
        from clawloop.policy.kv_reuse import MIN_REUSE, prefill_groups

        store = self.prefix_store
        assert store is not None
        todo = [(p[:-1], store.lookup(p).length) for p in prompts]
        todo = [(p, c) for p, c in todo if len(p) - c >= MIN_REUSE]
        for group in prefill_groups([c for _, c in todo], [len(p) - c for p, c in todo]):
            self._prefill([todo[i][0] for i in group])

    def _prefill(self, batch: list[list[int]]) -> None:
        """One forward over `batch` (reusing what the store holds) whose KV go to the store."""
        import torch

        from clawloop.policy.kv_reuse import layout

        store = self.prefix_store
        if not batch or store is None:
            return
        hits = [store.lookup(p) for p in batch]
        ids, mask, cache, C = layout(batch, hits, self.tokenizer.pad_token_id, self.model.config,
                                     self.device, self.model.dtype, 0, zeroed=not self._fast)
        # Only the uncached columns go in; positions follow the mask, as in generate.
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, C:]
        with torch.inference_mode():
            self.forward(ids[:, C:], mask, positions, cache, C, last_only=True)
        for row, (p, h) in enumerate(zip(batch, hits, strict=True)):
            _keep(store, p, h, cache, row, C, ids.shape[1])

    def _drafter(self, tools: list[dict[str, Any]] | None) -> Any:
        """The decode loop's guesser for replies to prompts with these tools (None: off)."""
        if not self.config.speculate or self.config.decode != "loop":
            return None
        import json

        from clawloop.policy.draft import Drafter, tool_call_snippets

        key = json.dumps(tools, sort_keys=True)
        if key not in self._drafters:
            self._drafters[key] = Drafter(self.config.speculate, tool_call_snippets(self.tokenizer, tools))
        return self._drafters[key]

    def _generate_batch(self, prompts: list[list[int]], sampling: SamplingParams,
                        tools: list[dict[str, Any]] | None = None) -> list[Generation]:
        import torch

        from clawloop.policy.kv_reuse import Hit, layout

        pad = self.tokenizer.pad_token_id
        store = self.prefix_store
        if store is not None:
            self._prefill_shared(prompts)
            if len(prompts) > 1:
                self._prefill_rows(prompts)
        hits = [store.lookup(p) if store else Hit(0, None, None) for p in prompts]
        max_new = max(1, min(sampling.max_new_tokens, self.max_context - max(len(p) for p in prompts)))
        input_ids, attention, cache, C = layout(prompts, hits, pad, self.model.config, self.device,
                                                self.model.dtype, max_new, zeroed=not self._fast)
        width = input_ids.shape[1]
        if self.config.decode == "loop":  # (it grows the cache when guesses need room)
            return self._decode_loop(prompts, hits, input_ids, attention, cache, C, max_new, sampling,
                                     self._drafter(tools))
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new, "eos_token_id": self.stop_ids, "pad_token_id": pad,
            "use_cache": True, "do_sample": sampling.temperature > 0, "return_dict_in_generate": True,
        }
        kwargs[_cache_kwarg()] = cache
        if sampling.temperature > 0:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        if sampling.stop:
            kwargs.update(stop_strings=sampling.stop, tokenizer=self.tokenizer)
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed * 1_000_003 + next(self._calls))
        with torch.inference_mode():
            out = self.model.generate(input_ids=input_ids, attention_mask=attention, **kwargs)
        seqs = out.sequences
        new_cache = getattr(out, _cache_kwarg(), None)
        gens = []
        stops = set(self.stop_ids)
        for row, (p, h) in enumerate(zip(prompts, hits, strict=True)):
            if store is not None and new_cache is not None:
                _keep(store, p, h, new_cache, row, C, width)
            new = seqs[row, width:].tolist()
            n = next((j + 1 for j, t in enumerate(new) if t in stops), len(new))
            gens.append(self._reply(p, new[:n], sampling))
        return gens

    def _reply(self, prompt: list[int], new: list[int], sampling: SamplingParams) -> Generation:
        """The Generation of tokens `new` (ending with a stop token when the reply ended)."""
        ended = bool(new) and new[-1] in self.stop_ids
        text = self.tokenizer.decode(new[:-1] if ended else new, skip_special_tokens=False)
        reason = "stop" if ended else "length"
        if sampling.stop:
            text, hit = _cut_at_stop(text, sampling.stop)
            reason = "stop" if hit else reason
        return Generation(text, len(prompt), len(new), reason, tuple(prompt), tuple(new))


    def _decode_loop(self, prompts: list[list[int]], hits: list[Any], input_ids: Any, attention: Any,
                     cache: Any, C: int, max_new: int, sampling: SamplingParams,
                     drafter: Any = None) -> list[Generation]:
        import torch

        from clawloop.policy.decode import decode

        store, width = self.prefix_store, input_ids.shape[1]

        def keep_prompt(row: int, cache_now: Any, index: int, fed: list[int], columns: Any) -> None:
            # The reply's keys/values too: the next turn's prompt re-renders the reply, so a
            # multi-turn episode prefills only what the environment added (where the template's
            # rendering of the reply tokenizes as the model wrote it).
            if store is not None:
                _keep(store, prompts[row], hits[row], cache_now, index, C, width, fed, columns)

        def stopped(tokens: list[int]) -> bool:
            return _cut_at_stop(self.tokenizer.decode(tokens, skip_special_tokens=False), sampling.stop)[1]

        if sampling.seed is not None:
            torch.manual_seed(sampling.seed * 1_000_003 + next(self._calls))
        rows = decode(self.forward, input_ids, attention, cache, C, max_new=max_new, stop_ids=set(self.stop_ids),
                      temperature=sampling.temperature, top_p=sampling.top_p, on_finish=keep_prompt,
                      stopped=stopped if sampling.stop else None, drafter=drafter,
                      draft_tokens=self.config.speculate_tokens or (72 if self.config.quantize == "int8" else 24))
        if hasattr(drafter, "remember"):  # the next replies are guessed from these ones' tokens too
            for new, _ in rows:
                drafter.remember(new)
        return [self._reply(p, new, sampling) for p, (new, _) in zip(prompts, rows, strict=True)]
