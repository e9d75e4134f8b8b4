#!/bin/bash
# The file equals the original text with LF endings.
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/meeting-notes.txt /tests/expected.txt
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
