#!/bin/bash
# active_users.txt lists exactly the users with active == true (the boolean), in file order.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/active_users.txt ] || return 1
  diff <(cat /workspace/active_users.txt; [ -n "$(tail -c1 /workspace/active_users.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
