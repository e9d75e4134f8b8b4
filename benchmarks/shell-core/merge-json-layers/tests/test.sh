#!/bin/bash
# merged.json equals the expected shallow merge (key order and formatting are free).
mkdir -p /logs/verifier
check() {
  /usr/bin/python3 - <<'PY'
import json, sys
try:
    got = json.load(open("/workspace/merged.json"))
except Exception:
    sys.exit(1)
want = json.load(open("/tests/expected.json"))
sys.exit(0 if got == want and "replicas" in got else 1)
PY
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
