"""Stage `suites`: fingerprint the suites the loop reads → runs/suites.json.

    python -m stages.suites --out runs/suites.json

Lists the content-hash ids of every task in `eval.suites` and `validation.heldout`. The stages
that read those suites depend on this file, not on the suite directories (see
clawloop/artifacts/suites.py), and check it before they roll anything out.
"""

from clawloop.artifacts import suites as suite_manifest
from clawloop.artifacts.stage import run_stage, stage_parser
from clawloop.config.params import Params
from clawloop.core.io import write_json


def main(params: Params) -> None:
    ap = stage_parser(iteration=False)
    args = ap.parse_args()
    manifest = suite_manifest.build(params)
    write_json(args.out, manifest)
    for path, entry in manifest["suites"].items():
        print(f"[suites] {path}: {len(entry['tasks'])} tasks"
              + (f", {len(entry['errors'])} fail to load" if entry["errors"] else ""))


if __name__ == "__main__":
    run_stage(main)
