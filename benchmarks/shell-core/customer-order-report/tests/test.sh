#!/bin/bash
# report.csv parses to exactly the expected rows (values compared as text).
mkdir -p /logs/verifier
check() {
  /usr/bin/python3 - <<'PY'
import csv, sys
try:
    got = list(csv.reader(open("/workspace/report.csv", newline="")))
except Exception:
    sys.exit(1)
want = list(csv.reader(open("/tests/expected.csv", newline="")))
sys.exit(0 if got == want else 1)
PY
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
