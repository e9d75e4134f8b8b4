"""Stage `report`: the loop at a glance (report.html, report.md, plots, DVC plot tables).

    python -m stages.report --runs runs --out runs/report
"""

import argparse
from pathlib import Path

from clawloop.artifacts.stage import run_stage
from clawloop.config.params import Params
from clawloop.report.build import write_report


def main(params: Params) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    ap.add_argument("--out", type=Path, default=Path("runs/report"))
    args = ap.parse_args()

    page = write_report(args.runs, args.out)
    print(f"[report] {page}")


if __name__ == "__main__":
    run_stage(main)
