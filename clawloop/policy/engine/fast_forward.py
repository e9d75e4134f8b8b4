"""A lean CPU forward pass for the engine's rollouts: Llama, Qwen2 and Qwen3 decoders on the model's weights.

transformers' forward is written for every model and device; on a small CPU at batch 1 its
bookkeeping (attention over the whole static KV cache, dtype copies, masks and small ops) costs
about as much as the arithmetic (the profile: benchmarks/perf/README.md). This forward runs the
same layers with:
- q/k/v and gate/up projections fused into one matrix product each (one activation pass), the
  residual added in place by the op after the product;
- fp32 products of 4-256 rows (decode steps) through oneDNN on weights packed once: torch's
  default (MKL) path is slowest per row exactly there; bf16 weights (HFPolicyConfig.dtype auto on a
  CPU with native bf16) the same from 1 row on, with the cache, masks and residual stream in bf16
  as transformers' bf16 forward keeps them;
- decode attention as two batched matrix products over the cache columns filled so far
  (grouped-query heads share their keys without copies), with one additive mask per step;
  prefills through torch's fused attention;
- optional int8 weights (per output channel) and int8 activations (per token), int8_linear's
  scheme, through oneDNN's int8 product with the weights packed once (`torch._int_mm` where
  torch lacks it: the same integer sums, but it re-lays the weight out at every call; on a CPU
  without VNNI the weights have 7 bits, where oneDNN's sums stay exact, `onednn_int8_levels`),
  for rollouts only;
- the projections' biases where the model has them (Qwen2's q/k/v; Llama's attention_bias and
  mlp_bias), fused like their matrices and added after the product (after the per-token scale
  with int8); an untied output head is its own matrix, a tied one the embedding's.
Qwen3's per-head q/k norms run where the layers have them (Qwen2 and Llama have none). Sliding-
window layers (Qwen2's use_sliding_window, where max_window_layers leaves some layers windowed)
are refused: the engine's forward auto falls back to transformers' forward there.
It reads and writes the same transformers cache objects (`cache.layers[i].keys/values`, shape
[batch, kv_heads, columns, head_dim]) that prefix_cache lays out and extracts, so
prompt reuse across turns and the decode loop work unchanged. RMSNorm is torch's rms_norm with
the model's weights and epsilon; rotary embeddings use the model's own cos/sin. Training never
uses it. Packed weights are a second copy of the weights in memory (`prepack=False`: none).
"""

from __future__ import annotations

from typing import Any

import torch

from clawloop.policy.engine.int8_linear import quantize_rows, quantize_weight

SUPPORTED = ("llama", "qwen2", "qwen3")
SDPA_TOKENS = 16
"""Steps of at least this many tokens (prefills) attend through torch's fused attention kernel;
at 1-9 tokens (decode steps) the two matrix products are faster (benchmarks/perf/README.md)."""
PACKED_ROWS = (4, 256)
"""fp32 products of this many rows (inclusive) go through oneDNN on packed weights: decode steps,
guesses included. 1-3 rows and prefills are faster through torch.nn.functional.linear."""
PACKED_ROWS_BF16 = (1, 256)
"""The same for bf16 weights: packed, oneDNN's bf16 product is 2-6x F.linear's from 1 row on (an
avx512_bf16 EPYC, 896 x 4864: 1 row 103 vs 16 GFLOPS, 32 rows 426 vs 293; benchmarks/perf/README.md)."""


def supports(model: Any) -> str | None:
    """Why `model` cannot run here (None: it can)."""
    cfg = model.config
    if cfg.model_type not in SUPPORTED:
        return f"model_type {cfg.model_type!r} (fast forward: {', '.join(SUPPORTED)})"
    if getattr(cfg, "hidden_act", "silu") != "silu":
        return f"hidden_act {cfg.hidden_act!r}"
    layer_types = getattr(cfg, "layer_types", None)
    if any(t != "full_attention" for t in (layer_types or [])):
        return "sliding-window layers"
    if getattr(cfg, "use_sliding_window", False) and getattr(cfg, "sliding_window", None) and not layer_types:
        return "use_sliding_window without layer_types (which layers are windowed is unknown)"
    if model.dtype not in (torch.float32, torch.bfloat16):
        return f"dtype {model.dtype} (fast forward: float32 or bfloat16 weights, optionally as int8)"
    return None


_ONEDNN_LEVELS: int | None = None


def onednn_int8_levels() -> int:
    """Weight levels (|q| <= this) at which oneDNN's packed int8 product gives exact integer sums
    with 8-bit activations on this CPU, checked once: 127 with VNNI; 63 without (AVX2 only),
    whose u8 x s8 kernel adds pairs of products into int16 with saturation (vpmaddubsw):
    activations around zero point 128 (u8 up to 255) times weights near 127 overflow it, 7-bit
    weights do not (pairs <= 2 x 255 x 63 = 32130); 7-bit activations instead lost far more
    accuracy (benchmarks/perf/README.md). 0: neither, `torch._int_mm` (exact at 127, but much
    slower than fp32's product there)."""
    global _ONEDNN_LEVELS
    if _ONEDNN_LEVELS is None:
        _ONEDNN_LEVELS = 0
        if hasattr(torch.ops.onednn, "qlinear_prepack"):
            # Worst case: every pair of products at its largest (w = +-levels by rows, x = +-127).
            x = torch.full((4, 64), 127.0)
            x[1] = -127
            for levels in (127, 63):
                w = torch.full((16, 64), levels, dtype=torch.int8)
                w[1::2] = -levels
                try:
                    y = torch.ops.onednn.qlinear_pointwise(
                        x.add(128).to(torch.uint8), 1.0, 128, torch.ops.onednn.qlinear_prepack(w, None),
                        torch.ones(16), torch.zeros(16, dtype=torch.long), None, 1.0, 0, torch.float32, "none", [], "")
                except RuntimeError:
                    break
                if torch.equal(y, torch._int_mm(x.to(torch.int8), w.t()).float()):
                    _ONEDNN_LEVELS = levels
                    break
    return _ONEDNN_LEVELS


def _norm(module: Any) -> tuple[tuple[int], torch.Tensor, float]:
    """A Llama/Qwen2/Qwen3 RMSNorm module as torch.nn.functional.rms_norm's arguments (the same values)."""
    return (module.weight.shape[0],), module.weight, module.variance_epsilon


def _fuse(parts: list[torch.Tensor]) -> torch.Tensor:
    """The row blocks `parts` as one tensor; the parts become views of it (no second copy in memory)."""
    if len(parts) == 1:
        return parts[0].detach()
    fused = torch.cat([x.detach() for x in parts], dim=0)
    row = 0
    for x in parts:
        x.data = fused[row:row + x.shape[0]]
        row += x.shape[0]
    return fused


class _Linear:
    """One fused weight matrix: products in the weights' dtype, fp32 or bf16 (oneDNN on packed
    weights, or `F.linear`), or int8 x int8 products with per-channel weight and per-token
    activation scales; plus the fused bias where any of the matrices has one (zeros for those
    without)."""

    def __init__(self, weights: list[torch.Tensor], int8: bool, prepack: bool = True,
                 biases: list[torch.Tensor | None] | None = None) -> None:
        self.int8 = int8
        self.packed = None
        self.packed_rows = PACKED_ROWS_BF16 if weights[0].dtype == torch.bfloat16 else PACKED_ROWS
        self.bias = None
        if biases is not None and any(b is not None for b in biases):
            parts = [b if b is not None else w.new_zeros(w.shape[0]) for w, b in zip(weights, biases, strict=True)]
            # fp32: the model's own bias vectors become views of the fused one, as its matrices do.
            self.bias = _fuse(parts) if all(b is not None for b in biases) else torch.cat([x.detach() for x in parts])
        if int8:
            # Weights in [-levels, levels] per output channel: 8 bits, 7 where oneDNN's packed
            # product is exact only so (a CPU without VNNI, onednn_int8_levels).
            self.levels = (onednn_int8_levels() if prepack else 0) or 127
            q, self.scale = quantize_weight(torch.cat([x.detach() for x in weights], dim=0), self.levels)
            self.weight = q.t()
            if prepack and onednn_int8_levels():
                # oneDNN's int8 product with the weight packed once; `_int_mm` re-lays it out at
                # every call. Same integer sums (tested), faster (benchmarks/perf/README.md).
                self.packed = torch.ops.onednn.qlinear_prepack(q, None)
                self.zero_points = torch.zeros(q.shape[0], dtype=torch.long)
        else:
            # The model's own matrices become row blocks of the fused one: no second copy in memory.
            self.weight = _fuse(weights)
            if prepack and torch.backends.mkldnn.is_available():
                # oneDNN's fp32 (bf16) product on a copy of the weight in its blocked layout: faster
                # than torch's (MKL's) at 4-16 rows (1-256 in bf16), where MKL is slowest per row.
                # One more copy of the weights in memory.
                try:
                    self.packed = torch.ops.mkldnn._reorder_linear_weight(self.weight, 16)
                except (RuntimeError, AttributeError):
                    self.packed = None

    def _int8_sums(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(integer products times the weight scales, per-row activation scales), float32."""
        q, s = quantize_rows(x.float())  # bf16 activations: scales and rounding in float32
        if self.packed is None:
            return torch._int_mm(q.to(torch.int8), self.weight).float().mul_(self.scale), s
        # Activations as uint8 around zero point 128 with scale 1: the op returns the integer sums
        # times the weight scales; the per-token scale is applied by the caller.
        return torch.ops.onednn.qlinear_pointwise(q.add_(128).to(torch.uint8), 1.0, 128, self.packed, self.scale,
                                                  self.zero_points, None, 1.0, 0, torch.float32, "none", [], ""), s

    def _float_packed(self, x: torch.Tensor) -> bool:
        """Whether the fp32/bf16 product of x goes through the packed weights (`packed_rows`)."""
        return self.packed is not None and self.packed_rows[0] <= x.shape[0] <= self.packed_rows[1]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if not self.int8:
            if self._float_packed(x):
                return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
            return torch.nn.functional.linear(x, self.weight, self.bias)
        y, s = self._int8_sums(x)
        # The bias after the per-token scale (the op's own bias would be scaled with the sums);
        # back in the activations' dtype, which the cache and attention share (bf16 or fp32).
        return (y.mul_(s) if self.bias is None else y.mul_(s).add_(self.bias)).to(x.dtype)

    def add_into(self, h: torch.Tensor, x: torch.Tensor) -> None:
        """h += x @ W^T (+ bias) in place, in one op after the product (residual connections)."""
        if self.int8:
            y, s = self._int8_sums(x)
            h.addcmul_(y, s)
        elif self._float_packed(x):
            h.add_(self(x))
            return
        else:
            h.addmm_(x, self.weight.t())
        if self.bias is not None:
            h.add_(self.bias)


def _linear(modules: list[Any], int8: bool, prepack: bool) -> _Linear:
    """torch.nn.Linear modules (with or without biases) as one fused _Linear."""
    return _Linear([m.weight for m in modules], int8, prepack, [getattr(m, "bias", None) for m in modules])


class FastLM:
    """A causal LM's forward over its own weights: `logits = fast(ids, mask, positions, cache, start)`."""

    def __init__(self, model: Any, int8: bool = False, prepack: bool = True) -> None:
        why = supports(model)
        if why is not None:
            raise ValueError(f"fast forward cannot run this model: {why}")
        cfg = model.config
        self.model = model
        self.int8 = int8
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        self.layers = []
        for layer in model.model.layers:
            att, mlp = layer.self_attn, layer.mlp
            self.layers.append({
                "norm1": _norm(layer.input_layernorm), "norm2": _norm(layer.post_attention_layernorm),
                "qkv": _linear([att.q_proj, att.k_proj, att.v_proj], int8, prepack),
                "o": _linear([att.o_proj], int8, prepack),
                "gate_up": _linear([mlp.gate_proj, mlp.up_proj], int8, prepack),
                "down": _linear([mlp.down_proj], int8, prepack),
                "q_norm": _norm(att.q_norm) if hasattr(att, "q_norm") else None,
                "k_norm": _norm(att.k_norm) if hasattr(att, "k_norm") else None,
            })
        self.norm = _norm(model.model.norm)
        # Untied (Qwen2.5-Coder-0.5B, 136M of its 630M parameters) or the embedding's own matrix.
        self.head = _linear([model.get_output_embeddings()], int8, prepack)
        self.inter = model.config.intermediate_size

    def __call__(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any,
                 start: int, last_only: bool = False) -> torch.Tensor:
        """Logits [B, T, vocab] of tokens `ids` [B, T] written at cache columns start..start+T-1;
        `mask` [B, start + T]: which columns each row attends to (0 = padding or a rejected guess);
        `positions` [B, T]: their rotary positions. `last_only`: logits of the last column only."""
        rms_norm = torch.nn.functional.rms_norm
        inner = self.model.model
        B, T = ids.shape
        end = start + T
        H, KV, D = self.heads, self.kv_heads, self.head_dim
        G = H // KV
        # The residual stream as [B*T, hidden]; every sublayer adds into it in place.
        h = inner.embed_tokens(ids).reshape(B * T, -1)
        cos, sin = inner.rotary_emb(h, positions)
        # Rotary as x * cos + roll(x) * sin with the sign of the first half folded into sin
        # (transformers' rotate_half(x) = [-x2, x1] = roll(x) * [-1, 1]); [B, T, 1, D].
        cos = cos[:, :, None, :]
        sin = torch.cat([-sin[..., :D // 2], sin[..., D // 2:]], dim=-1)[:, :, None, :]
        # Additive mask [B, 1, 1, T, W]: the row's live columns, causal within the step. A padding
        # token sees itself, so no softmax row is empty (NaN keys would reach every row's sum).
        # Columns before every row's first live one (rows with longer contexts have left the
        # batch) are padding for all: attention starts after them. A row with none: from 0.
        lo = int(mask[:, :start].int().argmax(-1).min()) if start else 0
        W = end - lo
        cols, own = torch.arange(lo, end)[None, None, :], (start + torch.arange(T))[None, :, None]
        allowed = (mask[:, None, lo:end].bool() & (cols <= own)) | (cols == own)
        bias = torch.zeros(allowed.shape, dtype=h.dtype).masked_fill_(~allowed, float("-inf"))[:, None, None]
        scale = D ** -0.5
        for i, L in enumerate(self.layers):
            qkv = L["qkv"](rms_norm(h, *L["norm1"]))
            if L["q_norm"] is None:
                qk = qkv[:, :(H + KV) * D].view(B, T, H + KV, D)
            else:  # Qwen3: per-head norms of q and k before the rotation
                qk = torch.cat([rms_norm(qkv[:, :H * D].view(B, T, H, D), *L["q_norm"]),
                                rms_norm(qkv[:, H * D:(H + KV) * D].view(B, T, KV, D), *L["k_norm"])], dim=2)
            qk = torch.addcmul(qk * cos, qk.roll(D // 2, dims=-1), sin)
            q, k = qk[:, :, :H].transpose(1, 2), qk[:, :, H:].transpose(1, 2)
            v = qkv[:, (H + KV) * D:].view(B, T, KV, D).transpose(1, 2)
            layer = cache.layers[i]
            if not getattr(layer, "is_initialized", True):
                layer.lazy_initialization(k, v)
            layer.keys[:, :, start:end] = k
            layer.values[:, :, start:end] = v
            keys, values = layer.keys[:, :, lo:end], layer.values[:, :, lo:end]
            if T >= SDPA_TOKENS:
                attn = torch.nn.functional.scaled_dot_product_attention(
                    q, keys, values, attn_mask=bias.view(B, 1, T, W), enable_gqa=True)
            else:
                # Grouped-query heads: the G query heads of one key head attend as G*T rows.
                qg = q.reshape(B, KV, G * T, D)
                scores = torch.matmul(qg, keys.transpose(-1, -2)).mul_(scale).view(B, KV, G, T, W).add_(bias)
                attn = torch.matmul(scores.softmax(-1).view(B, KV, G * T, W), values)
            L["o"].add_into(h, attn.view(B, H, T, D).transpose(1, 2).reshape(B * T, H * D))
            gate, up = L["gate_up"](rms_norm(h, *L["norm2"])).split(self.inter, dim=-1)
            L["down"].add_into(h, torch.nn.functional.silu(gate).mul_(up))
        h = h.view(B, T, -1)
        if last_only:
            h = h[:, -1:]
        h = rms_norm(h, *self.norm)
        return self.head(h.reshape(-1, h.shape[-1])).view(h.shape[0], h.shape[1], -1)
