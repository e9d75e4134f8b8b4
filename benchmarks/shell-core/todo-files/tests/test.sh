#!/bin/bash
# todo_files.txt lists exactly the expected lines, in order (a missing final newline is tolerated).
mkdir -p /logs/verifier
check() {
  [ -f /workspace/todo_files.txt ] || return 1
  diff <(cat /workspace/todo_files.txt; [ -n "$(tail -c1 /workspace/todo_files.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
