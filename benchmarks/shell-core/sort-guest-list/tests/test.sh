#!/bin/bash
# guests_sorted.txt is the sorted list; guests.txt unchanged.
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/guests_sorted.txt /tests/expected.txt || return 1
  cmp -s /workspace/guests.txt /tests/original.txt || return 1
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
