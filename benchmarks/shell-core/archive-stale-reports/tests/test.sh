#!/bin/bash
# reports/ layout is exactly as expected and moved files kept their contents.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  diff <(find reports -mindepth 1 | LC_ALL=C sort) /tests/expected_tree.txt >/dev/null || return 1
  for f in reports/old/*; do
    [ "$(cat "$f")" = "content of $(basename "$f")" ] || return 1
  done
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
