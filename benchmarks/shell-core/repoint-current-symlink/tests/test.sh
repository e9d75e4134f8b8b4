#!/bin/bash
# current -> releases/v2.4.0 (relative), and releases/ has no new entries.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  [ -L current ] || return 1
  [ "$(readlink current)" = "releases/v2.4.0" ] || return 1
  [ "$(cat current/VERSION)" = "2.4.0" ] || return 1
  diff <(find . -mindepth 1 | LC_ALL=C sort) /tests/expected_tree.txt >/dev/null
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
