#!/bin/bash
# Report is complete; script still uses strict mode and survives zero-count files.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  cmp -s error_counts.txt /tests/expected.txt || return 1
  grep -q '^set -euo pipefail' count_errors.sh || return 1
  printf 'INFO nothing here\n' > logs/aaa.log
  rm -f error_counts.txt
  bash count_errors.sh >/dev/null 2>&1; rc=$?
  ok=0; { [ $rc -eq 0 ] && cmp -s error_counts.txt /tests/expected2.txt; } || ok=1
  rm -f logs/aaa.log
  bash count_errors.sh >/dev/null 2>&1
  return $ok
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
