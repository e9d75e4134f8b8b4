"""What every policy backend shares: the Policy protocol, the conversation and reply records,
sampling, the backends' options.

The lowest module of `clawloop.policy`: every backend module and `load` import it, it imports none
of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from clawloop.config.policy import (  # noqa: F401 (re-exported: the backends import them from here)
    LlamaCppPolicyConfig,
    OpenAIPolicyConfig,
    VLLMPolicyConfig,
)

Message = dict[str, Any]
Conversation = list[Message]

END_OF_TURN = "<|im_end|>"


class SamplingParams(BaseModel):
    """How replies are sampled (layer: policy; one of five rollout types, docs/names.md); every backend
    honours these fields."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(1.0, ge=0.0)
    """Softmax temperature; 0 means greedy decoding."""
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    """Nucleus sampling mass."""
    max_new_tokens: int = Field(256, gt=0)
    """Most tokens generated for one reply."""
    seed: int | None = None
    """Seed of the sampler (None: not seeded). Each generate call derives its own seed from it."""
    stop: list[str] = Field(default_factory=list)
    """Extra stop strings (the end-of-turn token always stops)."""


@dataclass(frozen=True)
class Generation:
    """One reply of a policy."""

    text: str
    """The reply without the end-of-turn token; tool calls in `<tool_call>` form."""
    prompt_tokens: int
    """Tokens of the rendered prompt (0 when the backend does not say)."""
    completion_tokens: int
    """Tokens generated, the end-of-turn token included."""
    finish_reason: str = "stop"
    """"stop" (end of turn), "length" (max_new_tokens), or "context" (prompt too long: no reply)."""
    prompt_ids: tuple[int, ...] | None = None
    """Prompt token ids, where the backend tokenizes locally (HF, vLLM)."""
    completion_ids: tuple[int, ...] | None = None
    """Generated token ids, where the backend tokenizes locally (HF, vLLM)."""


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Cut `text` at the first stop string; True when one was found."""
    cut = len(text)
    for s in stops:
        i = text.find(s)
        if s and i != -1:
            cut = min(cut, i)
    return text[:cut], cut < len(text)


@runtime_checkable
class Policy(Protocol):
    """Generates one assistant reply for each conversation of a batch (one of the loop's three
    contracts, shown beside the Environment and the Agent in clawloop.core.protocols)."""

    policy_id: str
    """Checkpoint name or hash, written into every trajectory."""

    def generate(self, conversations: Sequence[Conversation], sampling: SamplingParams,
                 *, tools: list[dict[str, Any]] | None = None) -> list[Generation]:
        """Reply to each conversation (HF chat format) with `tools` rendered in the prompt."""
        ...
