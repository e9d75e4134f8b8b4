#!/bin/bash
# History kept (bad commit is HEAD~1), HEAD undoes it exactly, tree clean.
mkdir -p /logs/verifier
# a private HOME whose git config trusts the repo even if it is owned by another user
export HOME=$(mktemp -d) && git config --global safe.directory '*'
check() {
  cd /workspace/billing || return 1
  [ "$(git rev-list --count HEAD)" = 5 ] || return 1
  [ "$(git log -1 --format=%s HEAD~1)" = "Switch rounding to floor" ] || return 1
  [ "$(git log -1 --format=%s HEAD~2)" = "Add README" ] || return 1
  git diff --quiet HEAD~2 HEAD || return 1
  [ -z "$(git status --porcelain)" ] || return 1
  cmp -s invoice.py /tests/expected_invoice.py
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
