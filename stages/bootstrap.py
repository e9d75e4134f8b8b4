"""Stage `bootstrap`: the policy iteration 1 starts from.

    python -m stages.bootstrap --out runs/iter-0/policy

With `model.checkpoint` set, the real checkpoint is handed over (hard links, no copy of the
weights where the filesystem allows); otherwise a tiny Qwen3-architecture model and its
tokenizer are built from scratch, offline (`model.init`, `model.seed`).
"""

import argparse
from pathlib import Path

from clawloop.params import Params
from clawloop.stage import output_dir, run_stage


def main(params: Params) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    if params.model.checkpoint:
        from clawloop.loop import hand_over
        from clawloop.training.checkpoint import check_base

        check_base(params.model.checkpoint)
        hand_over(params.model.checkpoint, args.out)
        return

    from clawloop.models.bootstrap import BootstrapConfig, bootstrap

    config = BootstrapConfig(size=params.model.init, seed=params.model.seed, **params.model.bootstrap,
                             pretrain=params.model.pretrain)
    with output_dir(args.out) as tmp:
        meta = bootstrap(tmp, config)
    print(f"[bootstrap] {meta['size']}: {meta['params']:,} parameters, vocab {meta['vocab_size']}")


if __name__ == "__main__":
    run_stage(main)
