#!/bin/bash
# py_files.txt: exactly the .py files, C-sorted.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/py_files.txt ] || return 1
  diff <(cat /workspace/py_files.txt; [ -n "$(tail -c1 /workspace/py_files.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
