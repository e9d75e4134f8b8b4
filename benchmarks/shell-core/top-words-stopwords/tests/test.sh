#!/bin/bash
# top5.txt matches the expected five words and counts.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/top5.txt ] || return 1
  diff <(cat /workspace/top5.txt; [ -n "$(tail -c1 /workspace/top5.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
