#!/bin/bash
# frames/ matches the expected names and contents.
mkdir -p /logs/verifier
check() {
  diff -r /workspace/frames /tests/expected >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
