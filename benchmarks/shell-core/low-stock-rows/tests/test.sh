#!/bin/bash
# low_stock.csv parses (as CSV) to exactly the expected rows; quoting style is free.
mkdir -p /logs/verifier
check() {
  /usr/bin/python3 - <<'PY'
import csv, sys
try:
    got = list(csv.reader(open("/workspace/low_stock.csv", newline="")))
except Exception:
    sys.exit(1)
want = list(csv.reader(open("/tests/expected.csv", newline="")))
sys.exit(0 if got == want else 1)
PY
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
