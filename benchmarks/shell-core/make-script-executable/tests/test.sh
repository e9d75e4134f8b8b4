#!/bin/bash
# deploy.sh is executable by its owner, unchanged, and runs.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  cmp -s deploy.sh /tests/expected_deploy.sh || return 1
  mode=$(stat -c %a deploy.sh)
  [ $(( 8#$mode & 8#100 )) -ne 0 ] || return 1
  [ "$(./deploy.sh)" = "deploying build 2024.06.3" ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
