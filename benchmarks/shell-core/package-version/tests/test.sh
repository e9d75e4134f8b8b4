#!/bin/bash
# version.txt holds 3.14.2 (one optional trailing newline).
mkdir -p /logs/verifier
check() {
  [ -f /workspace/version.txt ] || return 1
  [ "$(cat /workspace/version.txt)" = "3.14.2" ] || return 1
  [ "$(wc -l < /workspace/version.txt)" -le 1 ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
