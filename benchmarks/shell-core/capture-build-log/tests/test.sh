#!/bin/bash
# build.log is the interleaved output; status.txt is 3.
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/build.log /tests/expected_log.txt || return 1
  [ -f /workspace/status.txt ] && [ "$(tr -d ' \t\n' < /workspace/status.txt)" = 3 ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
