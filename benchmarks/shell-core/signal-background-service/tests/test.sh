#!/bin/bash
# The log shows start, reload, shutdown in that order; status is 3; the ready file is gone.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  cmp -s service.log /tests/expected.log || return 1
  [ -f service.status ] && [ "$(tr -d ' \t\n' < service.status)" = 3 ] || return 1
  [ ! -e service.ready ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
