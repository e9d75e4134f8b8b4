#!/bin/bash
# The two old reports live in archive/ with their content intact; the 2024 one did not move.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  [ -d archive ] || return 1
  cmp -s archive/report-2022.txt /tests/expected/report-2022.txt || return 1
  cmp -s archive/report-2023.txt /tests/expected/report-2023.txt || return 1
  [ ! -e report-2022.txt ] && [ ! -e report-2023.txt ] || return 1
  cmp -s report-2024.txt /tests/expected/report-2024.txt || return 1
  [ ! -e archive/report-2024.txt ] || return 1
  [ -f summary.md ] || return 1
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
