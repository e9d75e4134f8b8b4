#!/bin/bash
# inbox/ is flat: exactly the expected files (path-with-dashes names), same contents, no dirs.
mkdir -p /logs/verifier
check() {
  cd /workspace/inbox || return 1
  [ -z "$(find . -mindepth 1 -type d)" ] || return 1
  diff -r /workspace/inbox /tests/expected/inbox >/dev/null || return 1
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
