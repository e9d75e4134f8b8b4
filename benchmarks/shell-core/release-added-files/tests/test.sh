#!/bin/bash
# added.txt lists exactly the new files, C-sorted.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/added.txt ] || return 1
  diff <(cat /workspace/added.txt; [ -n "$(tail -c1 /workspace/added.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
