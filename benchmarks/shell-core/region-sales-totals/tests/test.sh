#!/bin/bash
# totals.txt: per-region sums, descending, ties by name.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/totals.txt ] || return 1
  diff <(cat /workspace/totals.txt; [ -n "$(tail -c1 /workspace/totals.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
