#!/bin/bash
# On main, HEAD is a merge of main's hotfix and feature; files resolved as asked; clean tree.
mkdir -p /logs/verifier
# a private HOME whose git config trusts the repo even if it is owned by another user
export HOME=$(mktemp -d) && git config --global safe.directory '*'
check() {
  cd /workspace/tool || return 1
  [ "$(git symbolic-ref --short HEAD 2>/dev/null)" = main ] || return 1
  [ "$(git rev-parse HEAD^2 2>/dev/null)" = "$(git rev-parse feature)" ] || return 1
  [ "$(git log -1 --format=%s HEAD^1)" = "Hotfix 1.4.1" ] || return 1
  [ -z "$(git status --porcelain)" ] || return 1
  [ "$(git show HEAD:VERSION)" = "1.5.0" ] || return 1
  cmp -s <(git show HEAD:CHANGELOG.md) /tests/expected_CHANGELOG.md || return 1
  cmp -s <(git show HEAD:tool.py) /tests/expected_tool.py || return 1
  git cat-file -e HEAD:export.py || return 1
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
