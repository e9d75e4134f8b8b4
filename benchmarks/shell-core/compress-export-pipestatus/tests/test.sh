#!/bin/bash
# Compressed output, separate stderr, export.sh's own status, one run, no uncompressed copy.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  gzip -t export.csv.gz 2>/dev/null || return 1
  cmp -s <(gzip -dc export.csv.gz) /tests/expected.csv || return 1
  cmp -s export.err /tests/expected.err || return 1
  [ -f export.status ] && [ "$(tr -d ' \t\n' < export.status)" = 2 ] || return 1
  [ "$(cat .export_runs 2>/dev/null)" = 1 ] || return 1
  # no uncompressed copy of the export anywhere in /workspace
  ! grep -rlqF '1006,ortiz,300.00' --exclude=export.sh . 2>/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
