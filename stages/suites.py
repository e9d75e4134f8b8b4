"""Stage `suites`: fingerprint the suites the loop reads → runs/suites.json.

    python -m stages.suites --out runs/suites.json

Lists the content-hash ids of every task in `eval.suites` and `validation.heldout`. The stages
that read those suites depend on this file, not on the suite directories (see
clawloop/suite_manifest.py), and check it before they roll anything out.
"""

from clawloop import suite_manifest
from clawloop.config.params import Params
from clawloop.io import write_json
from clawloop.stage import run_stage, stage_parser


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
