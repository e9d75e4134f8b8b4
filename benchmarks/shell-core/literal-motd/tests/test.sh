#!/bin/bash
# motd.txt matches the literal text (a missing final newline is tolerated).
mkdir -p /logs/verifier
check() {
  [ -f /workspace/motd.txt ] || return 1
  diff <(cat /workspace/motd.txt; [ -n "$(tail -c1 /workspace/motd.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
