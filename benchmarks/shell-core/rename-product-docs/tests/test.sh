#!/bin/bash
# docs/ equals the expected tree: .md files renamed, other files untouched.
mkdir -p /logs/verifier
check() {
  diff -r /workspace/docs /tests/expected >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
