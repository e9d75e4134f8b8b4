#!/bin/bash
# count.txt contains only the right number (surrounding whitespace ignored).
mkdir -p /logs/verifier
check() {
  [ -f /workspace/count.txt ] || return 1
  got=$(tr -d ' \t\n' < /workspace/count.txt)
  want=$(tr -d ' \t\n' < /tests/expected_count.txt)
  [ -n "$got" ] && [ "$got" = "$want" ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
