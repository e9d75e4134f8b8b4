#!/bin/bash
# summary.json parses and equals the expected counts and invalid-line total.
mkdir -p /logs/verifier
check() {
  /usr/bin/python3 - <<'PY'
import json, sys
try:
    got = json.load(open("/workspace/summary.json"))
except Exception:
    sys.exit(1)
want = json.load(open("/tests/expected.json"))
ok = got == want and all(type(v) is int for v in got["counts"].values()) and type(got["invalid_lines"]) is int
sys.exit(0 if ok else 1)
PY
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
