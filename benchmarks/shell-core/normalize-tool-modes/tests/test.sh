#!/bin/bash
# Exact modes under tools/ (setuid bits must be gone too); outside.sh untouched.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  diff <(find tools -print0 | LC_ALL=C sort -z | xargs -0 stat -c '%a %n') /tests/expected_modes.txt >/dev/null || return 1
  [ "$(stat -c %a outside.sh)" = 604 ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
