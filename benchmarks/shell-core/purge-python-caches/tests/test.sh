#!/bin/bash
# repo/ contains exactly the expected entries (empty docs/ may remain or go).
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  diff <(find repo -mindepth 1 ! -path repo/docs | LC_ALL=C sort) /tests/expected_tree.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
