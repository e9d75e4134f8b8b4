#!/bin/bash
# answer.txt holds the subject of the commit that first added FEATURE_FLAG_X.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/answer.txt ] || return 1
  [ "$(cat /workspace/answer.txt)" = "Wire up discounted checkout experiment" ] || return 1
  [ "$(wc -l < /workspace/answer.txt)" -le 1 ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
