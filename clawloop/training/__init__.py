"""Training: reference trajectories, data mixing, SFT and multi-turn GRPO (TRL), one `train` call.

`train(method, base, tasks, trajectories, probe, out, params)` is the stage entry point;
torch, transformers and trl are imported only when a function needs them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TrainParams", "train"]


def __getattr__(name: str) -> Any:
    if name == "train":
        from clawloop.training.run import train

        return train
    if name == "TrainParams":
        from clawloop.training.config import TrainParams

        return TrainParams
    raise AttributeError(name)
