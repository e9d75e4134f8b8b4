#!/bin/bash
# secrets.env is on disk, untracked and ignored; HEAD = "Ignore secrets" changing only .gitignore.
mkdir -p /logs/verifier
# a private HOME whose git config trusts the repo even if it is owned by another user
export HOME=$(mktemp -d) && git config --global safe.directory '*'
check() {
  cd /workspace/webapp || return 1
  [ "$(cat secrets.env)" = $'API_KEY=sk-test-123\nDB_PASS=swordfish' ] || return 1
  [ -z "$(git ls-files secrets.env)" ] || return 1
  git check-ignore -q secrets.env || return 1
  [ "$(git log --format=%s)" = $'Ignore secrets\nInitial app' ] || return 1
  [ "$(git diff --name-only HEAD~1 HEAD)" = ".gitignore" ] || return 1
  git show HEAD:.gitignore | grep -qx '\*\.pyc' || return 1
  git show HEAD:.gitignore | grep -qx '__pycache__/' || return 1
  [ -z "$(git ls-tree -r HEAD --name-only | grep secrets)" ] || return 1
  # the unrelated requirements.txt edit stays uncommitted
  [ "$(git status --porcelain)" = " M requirements.txt" ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
