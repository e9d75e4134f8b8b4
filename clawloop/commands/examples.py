"""One example (or a few) per command: shown at the end of `clawloop COMMAND --help` (clawloop.cli
sets each command's epilog from here) and in docs/cli.md (scripts/cli_docs.py), so the two cannot
drift apart. tests/test_cli_docs.py fails when a command has none.

Each line is a command that runs from the repository root as written: paths under /tmp/clawloop
chain one example into the next (synth, then validate, then export ...); paths under runs/ are what
`dvc repro` writes (runs/iter-3 is the last iteration of the default loop).
"""

from __future__ import annotations

EXAMPLES: dict[str, list[str]] = {
    "eval": [
        "clawloop eval benchmarks/shell-core --agent oracle --out /tmp/clawloop/eval --fail-under 1",
        "clawloop eval benchmarks/shell-core --agent model --model runs/iter-3/policy --out /tmp/clawloop/eval-model",
    ],
    "diagnose": ["clawloop diagnose runs/iter-1/eval --previous-diagnosis runs/iter-0/diagnosis/diagnosis.json "
                 "--out /tmp/clawloop/diagnosis"],
    "train": ["clawloop train --base runs/iter-0/policy --tasks runs/iter-1/validated/valid.jsonl "
              "--out /tmp/clawloop/checkpoint --set sft.max_steps=20"],
    "check": ["clawloop check params.yaml  # or runs/, runs/iter-1, one artifact"],
    "report": ["clawloop report runs --out /tmp/clawloop/report  # open /tmp/clawloop/report/report.html"],
    "view": ["clawloop view /tmp/clawloop/eval --out /tmp/clawloop/viewer  # open /tmp/clawloop/viewer/index.html"],
    "compare": ["clawloop compare runs/iter-0 runs/iter-3 --tasks"],
    "serve": ["clawloop serve runs/iter-3/policy --port 8000  # then --model openai:policy@http://127.0.0.1:8000/v1"],
    "version": ["clawloop version"],
    "sandbox run": ["clawloop sandbox run --workspace benchmarks/shell-core/append-journal --timeout 10 -- 'pwd; ls'"],
    "sandbox doctor": ["clawloop sandbox doctor"],
    "sandbox build-image": ["clawloop sandbox build-image --method dockerfile  # needs a docker daemon"],
    "sandbox reap": ["clawloop sandbox reap"],
    "sandbox layers": ["clawloop sandbox layers --prune --older-than 30"],
    "tasks schema": ["clawloop tasks schema > /tmp/clawloop/task.schema.json"],
    "tasks synth": ["clawloop tasks synth --n 20 --seed 0 --out /tmp/clawloop/pool.jsonl"],
    "tasks validate": ["clawloop tasks validate /tmp/clawloop/pool.jsonl --out /tmp/clawloop/valid.jsonl "
                       "--rejections /tmp/clawloop/rejections.json"],
    "tasks probe": ["clawloop tasks probe /tmp/clawloop/valid.jsonl --model runs/iter-3/policy --k 4 "
                    "--out /tmp/clawloop/probe.jsonl"],
    "tasks import": ["clawloop tasks import benchmarks/shell-core --out /tmp/clawloop/shell-core.jsonl"],
    "tasks export": ["clawloop tasks export /tmp/clawloop/valid.jsonl --out /tmp/clawloop/harbor"],
    "model init": ["clawloop model init --base scratch-tiny --out /tmp/clawloop/tiny"],
    "model info": ["clawloop model info /tmp/clawloop/tiny"],
    "model gguf": ["clawloop model gguf runs/iter-3/policy --out /tmp/clawloop/policy.gguf --type q8_0"],
    "model kl": ["clawloop model kl --checkpoint runs/iter-1/checkpoint --reference runs/iter-0/policy "
                 "--conversations runs/iter-1/checkpoint --max 16"],
}


def examples(command: str) -> list[str]:
    """The example lines of `command` ("eval", "tasks validate"); [] when it has none."""
    return EXAMPLES.get(command, [])


def epilog(command: str) -> str | None:
    """The help's closing section for `command`: its examples, or None."""
    lines = examples(command)
    if not lines:
        return None
    return ("Example:" if len(lines) == 1 else "Examples:") + "\n" + "\n".join(lines)
