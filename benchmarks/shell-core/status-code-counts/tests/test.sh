#!/bin/bash
# status_counts.txt must match exactly (a missing final newline is tolerated).
mkdir -p /logs/verifier
check() {
  [ -f /workspace/status_counts.txt ] || return 1
  diff <(cat /workspace/status_counts.txt; [ -n "$(tail -c1 /workspace/status_counts.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
