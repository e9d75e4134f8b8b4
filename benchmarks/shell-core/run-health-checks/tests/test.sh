#!/bin/bash
# results.txt lists each check with its exit status, in name order.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/results.txt ] || return 1
  diff <(cat /workspace/results.txt; [ -n "$(tail -c1 /workspace/results.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
