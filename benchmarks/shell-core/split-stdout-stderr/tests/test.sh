#!/bin/bash
# out.txt has only stdout, err.txt only stderr.
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/out.txt /tests/expected_out.txt || return 1
  cmp -s /workspace/err.txt /tests/expected_err.txt
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
