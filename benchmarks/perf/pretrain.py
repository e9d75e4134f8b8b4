"""Copy ability of the embedded model as teacher-free pretraining runs: the curve, and its cost.

    .venv/bin/python benchmarks/perf/pretrain.py [--json] [--steps 300] [--batch 8] [--seq-len 256]
        [--lr 3e-3] [--size tiny] [--probe-every 50] [--probe-items 50] [--out DIR] [--mix chat=.4,task=.3,...]

Builds the bootstrap model (clawloop.bootstrap.scratch.bootstrap with `pretrain` options) and
prints, every --probe-every steps, the LM loss and the copy probe (clawloop.bootstrap.copy_probe):
name_exact (held-out random names copied exactly into the command, teacher-forced),
command_exact, call_token_acc and induction_acc; wall and CPU seconds so far (the machine may
be shared: CPU seconds are the stabler cost). --out keeps the pretrained model.
--json prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--tokenizer", default="split")
    ap.add_argument("--probe-every", type=int, default=50)
    ap.add_argument("--probe-items", type=int, default=50)
    ap.add_argument("--mix", default=None, help="kind=share,... (chat, task, shell, help)")
    ap.add_argument("--system", type=float, default=None, help="share of documents with the system prompt")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--induction-warmup", type=int, default=0)
    ap.add_argument("--induction-rows", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    from clawloop.bootstrap.scratch import bootstrap
    from clawloop.config.bootstrap import BootstrapConfig

    pre = {"steps": args.steps, "batch_size": args.batch, "seq_len": args.seq_len,
           "learning_rate": args.lr, "probe_every": args.probe_every, "probe_items": args.probe_items,
           "seed": args.seed}
    if args.system is not None:
        pre["system_prompt"] = args.system
    pre["induction_warmup"], pre["induction_rows"] = args.induction_warmup, args.induction_rows
    if args.threads:
        pre["threads"] = args.threads
    if args.mix:
        pre["mix"] = {k: float(v) for k, v in (kv.split("=") for kv in args.mix.split(","))}
    config = BootstrapConfig(size=args.size, seed=args.seed, vocab_size=args.vocab,
                             tokenizer_scheme=args.tokenizer, pretrain=pre)
    print(f"{'step':>5} {'loss':>7} {'name_exact':>10} {'cmd_exact':>9} {'tok_acc':>7} {'induct':>6}"
          f" {'wall_s':>7} {'cpu_s':>7}", flush=True)

    def log(p: dict) -> None:
        loss = "-" if p["loss"] is None else f"{p['loss']:.3f}"
        print(f"{p['step']:>5} {loss:>7} {p['name_exact']:>10.3f} {p['command_exact']:>9.3f}"
              f" {p['call_token_acc']:>7.3f} {p['induction_acc']:>6.3f} {p['wall_s']:>7.1f} {p['cpu_s']:>7.1f}",
              flush=True)

    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "policy"
        meta = bootstrap(out, config, log=log)
    rec = meta["pretrain"] or {}
    result = {"size": args.size, "params": meta["params"], "tokenizer": meta["tokenizer"],
              "pretrain": rec.get("config"), "curve": rec.get("curve"), "tokens": rec.get("tokens"),
              "pretrain_wall_s": rec.get("wall_time_s"), "pretrain_cpu_s": rec.get("cpu_time_s"),
              "bootstrap_wall_s": round(time.time() - t0, 1), "load_avg": os.getloadavg()[0]}
    print(f"{meta['params']:,} params, {rec.get('tokens', 0):,} tokens in {rec.get('wall_time_s')} s wall"
          f" ({rec.get('cpu_time_s')} s CPU), load {result['load_avg']:.1f}")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
