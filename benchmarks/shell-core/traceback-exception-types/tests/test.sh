#!/bin/bash
# exceptions.txt matches the expected tally exactly.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/exceptions.txt ] || return 1
  diff <(cat /workspace/exceptions.txt; [ -n "$(tail -c1 /workspace/exceptions.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
