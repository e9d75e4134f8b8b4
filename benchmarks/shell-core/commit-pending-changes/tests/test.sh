#!/bin/bash
# Two commits; the new one is "Add lentil soup" with both files; nothing left uncommitted.
mkdir -p /logs/verifier
# a private HOME whose git config trusts the repo even if it is owned by another user
export HOME=$(mktemp -d) && git config --global safe.directory '*'
check() {
  cd /workspace/recipes || return 1
  [ "$(git log --format=%s 2>/dev/null)" = $'Add lentil soup\nInitial recipes' ] || return 1
  [ -z "$(git status --porcelain 2>/dev/null)" ] || return 1
  cmp -s <(git show HEAD:README.md) /tests/expected_README.md || return 1
  cmp -s <(git show HEAD:soups/lentil.md) /tests/expected_lentil.md || return 1
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
