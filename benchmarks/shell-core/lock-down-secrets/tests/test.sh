#!/bin/bash
# Exact modes under secrets/; README.md untouched.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  diff <(find secrets -print0 | LC_ALL=C sort -z | xargs -0 stat -c '%a %n') /tests/expected_modes.txt >/dev/null || return 1
  [ "$(stat -c %a README.md)" = 644 ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
