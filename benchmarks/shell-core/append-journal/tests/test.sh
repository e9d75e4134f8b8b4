#!/bin/bash
# journal.txt = old journal followed by the new entries.
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/journal.txt /tests/expected.txt
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
