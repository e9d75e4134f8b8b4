"""Int8 rollouts on a CPU: every Linear layer as an int8 x int8 matrix product.

Weights are quantized once per output channel (symmetric, scale = max |w| / 127); activations
once per token at each call (scale = max |x| / 127 of that row), and `torch._int_mm` multiplies
them with VNNI instructions, several times the fp32 matmul rate (benchmarks/perf/README.md).
Per-token scales matter on a 135M model: torch.ao's dynamic quantization uses one scale per
tensor, so one outlier token flattens the rest of the batch (visibly broken tool calls).

Training never sees this: EngineConfig(quantize="int8") converts the policy's copy after
loading, and the checkpoint on disk stays fp32.
"""

from __future__ import annotations

from typing import Any

import torch


def quantize_weight(w: torch.Tensor, levels: int = 127) -> tuple[torch.Tensor, torch.Tensor]:
    """[out, in] weights as int8 in [-levels, levels] with one scale per output channel
    (max |w| / levels; fast_forward uses 63 where its int8 product needs 7 bits)."""
    w = w.detach().float()
    scale = w.abs().amax(dim=1).clamp(min=1e-8) / levels
    return torch.round(w / scale[:, None]).clamp(-levels, levels).to(torch.int8), scale


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of x as rounded float values in [-127, 127] with one scale per row (max |x| / 127)."""
    scale = x.abs().amax(dim=-1, keepdim=True).clamp_(min=1e-8).div_(127)
    return (x / scale).round_(), scale


class Int8Linear(torch.nn.Module):
    """A frozen Linear with int8 weights (per output channel) and int8 activations (per token)."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        q, scale = quantize_weight(linear.weight)
        # [in, out] as a transposed view of the row-major [out, in]: _int_mm's fastest layout,
        # at batch 1 as well as batch 32.
        self.register_buffer("weight_t", q.t(), persistent=False)
        self.register_buffer("weight_scale", scale, persistent=False)
        bias = linear.bias.detach().float().clone() if linear.bias is not None else None
        self.register_buffer("bias", bias, persistent=False)
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        rows = x.reshape(-1, shape[-1]).float()
        q, scale = quantize_rows(rows)
        y = torch._int_mm(q.to(torch.int8), self.weight_t).float().mul_(scale).mul_(self.weight_scale)
        if self.bias is not None:
            y.add_(self.bias)
        return y.reshape(*shape[:-1], self.out_features).to(x.dtype)


def quantize_linears(model: Any) -> int:
    """Replace every torch.nn.Linear of `model` (the tied output head too) with an Int8Linear,
    in place; returns how many. The input embedding stays as it is."""
    count = 0
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(module, name, Int8Linear(child))
                count += 1
    return count
