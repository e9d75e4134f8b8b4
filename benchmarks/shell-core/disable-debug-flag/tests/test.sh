#!/bin/bash
# Only the debug line changed.
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/app.ini /tests/expected.ini
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
