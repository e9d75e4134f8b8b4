#!/bin/bash
# packages/ equals the expected tree byte for byte.
mkdir -p /logs/verifier
check() {
  diff -r /workspace/packages /tests/expected >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
