#!/bin/bash
# Run nightly.sh from unrelated directories; output must land in /workspace/out only.
mkdir -p /logs/verifier
check() {
  rm -rf /workspace/out
  d=$(mktemp -d)
  (cd "$d" && /workspace/nightly.sh) >/dev/null 2>&1 || return 1
  cmp -s /workspace/out/summary.txt /tests/expected_summary.txt || return 1
  [ -z "$(ls -A "$d")" ] || return 1
  rm -rf /workspace/out
  (cd "$d" && bash /workspace/nightly.sh) >/dev/null 2>&1 || return 1
  cmp -s /workspace/out/summary.txt /tests/expected_summary.txt || return 1
  [ -z "$(ls -A "$d")" ] || return 1
  rm -rf "$d"
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
