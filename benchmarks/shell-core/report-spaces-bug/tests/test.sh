#!/bin/bash
# report.txt is current; the script also copes with a new file whose name has two spaces.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  cmp -s report.txt /tests/expected_report.txt || return 1
  printf '1\n2\n' > "data/extra  file.txt"
  rm -f report.txt
  (cd / && bash /workspace/make_report.sh) >/dev/null 2>&1
  ok=0; cmp -s report.txt /tests/expected_report2.txt || ok=1
  rm -f "data/extra  file.txt"
  (cd / && bash /workspace/make_report.sh) >/dev/null 2>&1
  return $ok
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
