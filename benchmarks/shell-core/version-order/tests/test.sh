#!/bin/bash
# releases_sorted.txt: unique tags in version order.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/releases_sorted.txt ] || return 1
  diff <(cat /workspace/releases_sorted.txt; [ -n "$(tail -c1 /workspace/releases_sorted.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
