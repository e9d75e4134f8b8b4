#!/bin/bash
# emails.txt lists exactly the expected lines, in order (a missing final newline is tolerated).
mkdir -p /logs/verifier
check() {
  [ -f /workspace/emails.txt ] || return 1
  diff <(cat /workspace/emails.txt; [ -n "$(tail -c1 /workspace/emails.txt)" ] && echo) /tests/expected_emails.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
