"""Make benchmarks/synth-heldout: the loop's own task distribution, held out.

    .venv/bin/python benchmarks/synth-heldout/make.py            # (re)write the suite in place
    .venv/bin/python benchmarks/synth-heldout/make.py --check    # exit 1 when the tree differs

Routine A's generators draw `--per-cell` tasks for every skill family at levels 1-4 (the levels
the loop's curriculum moves through), in the seed namespace HELDOUT_NAMESPACE that no synthesis
stage uses, with the loop's conversational share. Each task is written as a Harbor task
directory named `<skill>-L<level>-<n>`; MANIFEST.json records this command, the seed, the
namespace, every generator's version and each task's id, so a generator change shows up as a
diff here (rerun the command, review, commit). The suite shares templates with training, never
instances: validation drops a synthesized task equal to one of these (instruction and files),
and `overlap.py` measures how near the loop's pools come.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
import tempfile
from pathlib import Path

from clawloop.config.synthesis import Forms
from clawloop.core.io import write_text
from clawloop.core.tasks.harbor_export import export_harbor_task
from clawloop.core.tasks.task import Task
from clawloop.phases.synthesize.procedural.generate import HELDOUT_NAMESPACE, synthesize
from clawloop.phases.synthesize.skills import families
from clawloop.phases.synthesize.steering import Plan

HERE = Path(__file__).resolve().parent
LEVELS = (1, 2, 3, 4)
CONVERSATIONAL = 0.5
"""params.yaml `synthesis.conversational`: the split is phrased as the loop's pools are."""


def make_tasks(per_cell: int, seed: int) -> list[Task]:
    """`per_cell` tasks per (skill, level), levels 1-4, in the held-out seed namespace."""
    quotas = {(skill, level): per_cell for skill in families() for level in LEVELS}
    return synthesize(Plan(quotas=quotas), seed, iteration=0, forms=Forms(conversational=CONVERSATIONAL),
                      namespace=HELDOUT_NAMESPACE)


def write_suite(tasks: list[Task], out: Path, *, per_cell: int, seed: int) -> None:
    """Write each task as the Harbor directory `out/<skill>-L<level>-<n>`, then MANIFEST.json."""
    names: dict[str, str] = {}
    counts: dict[tuple[str, int], int] = {}
    for t in tasks:
        n = counts[(t.skill, t.level)] = counts.get((t.skill, t.level), 0) + 1
        name = f"{t.skill}-L{t.level}-{n}"
        export_harbor_task(t, out / name)
        names[name] = t.id
    manifest = {
        "command": f"python benchmarks/synth-heldout/make.py --per-cell {per_cell} --seed {seed}",
        "namespace": HELDOUT_NAMESPACE, "seed": seed, "levels": list(LEVELS), "per_cell": per_cell,
        "conversational": CONVERSATIONAL,
        "generators": {name: fam.generator_id for name, fam in families().items()},
        "tasks": names,
    }
    write_text(out / "MANIFEST.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b, ignore=[])
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    return all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-cell", type=int, default=4, help="tasks per (skill, level)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="compare with the committed suite instead of writing")
    args = ap.parse_args()
    tasks = make_tasks(args.per_cell, args.seed)
    keep = {"make.py", "overlap.py", "README.md"}
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "suite"
        write_suite(tasks, fresh, per_cell=args.per_cell, seed=args.seed)
        if args.check:
            current = Path(tmp) / "current"
            shutil.copytree(HERE, current, ignore=lambda d, names: [n for n in names if n in keep or
                                                                       n == "__pycache__"])
            same = _same_tree(fresh, current)
            print(f"[synth-heldout] {len(tasks)} tasks: {'matches' if same else 'DIFFERS FROM'} the committed suite")
            return 0 if same else 1
        for old in HERE.iterdir():
            if old.name not in keep:
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        for new in fresh.iterdir():
            shutil.move(str(new), HERE / new.name)
    print(f"[synth-heldout] wrote {len(tasks)} tasks ({len(families())} skills x levels {LEVELS[0]}-{LEVELS[-1]} "
          f"x {args.per_cell}) to {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
