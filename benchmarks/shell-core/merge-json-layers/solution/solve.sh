#!/bin/bash
python3 - <<'PY'
import glob, json
merged = {}
for path in sorted(glob.glob("/workspace/conf.d/*.json")):
    merged.update(json.load(open(path)))
with open("/workspace/merged.json", "w") as f:
    json.dump(merged, f, indent=2)
PY
