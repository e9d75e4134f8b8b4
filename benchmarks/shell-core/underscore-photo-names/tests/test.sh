#!/bin/bash
# The folder keeps its name; every file inside has spaces turned into underscores, same bytes.
mkdir -p /logs/verifier
check() {
  [ -d "/workspace/Photos From Trip" ] || return 1
  diff -r "/workspace/Photos From Trip" "/tests/expected/Photos From Trip" >/dev/null || return 1
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
