#!/bin/bash
# Both files exact, and the producer ran exactly once.
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/warnings.txt /tests/expected_warnings.txt || return 1
  cmp -s /workspace/rest.txt /tests/expected_rest.txt || return 1
  [ "$(cat /workspace/.producer_runs 2>/dev/null)" = 1 ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
