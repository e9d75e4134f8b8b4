#!/bin/bash
# Output captured; status is timeout's "timed out" code (124, or 137 when killed with KILL).
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/warmup.out /tests/expected_out.txt || return 1
  [ -f /workspace/warmup.status ] || return 1
  s=$(tr -d ' \t\n' < /workspace/warmup.status)
  [ "$s" = 124 ] || [ "$s" = 137 ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
