#!/bin/bash
# errors.txt holds exactly the level-ERROR lines, in order.
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/errors.txt /tests/expected_errors.txt
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
