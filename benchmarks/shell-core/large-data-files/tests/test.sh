#!/bin/bash
# big_files.txt: exactly the files over 10240 bytes, C-sorted.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/big_files.txt ] || return 1
  diff <(cat /workspace/big_files.txt; [ -n "$(tail -c1 /workspace/big_files.txt)" ] && echo) /tests/expected.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
