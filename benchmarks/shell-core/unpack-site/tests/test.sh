#!/bin/bash
# site/ holds exactly the archive's files.
mkdir -p /logs/verifier
check() {
  [ -d /workspace/site ] || return 1
  diff -r /workspace/site /tests/expected/site >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
