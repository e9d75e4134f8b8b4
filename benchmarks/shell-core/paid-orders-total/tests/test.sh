#!/bin/bash
# paid_total.txt contains exactly the expected total (surrounding whitespace ignored).
mkdir -p /logs/verifier
check() {
  [ -f /workspace/paid_total.txt ] || return 1
  [ "$(tr -d ' \t\n' < /workspace/paid_total.txt)" = "$(tr -d ' \t\n' < /tests/expected.txt)" ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
