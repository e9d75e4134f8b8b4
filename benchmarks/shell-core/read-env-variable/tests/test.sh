#!/bin/bash
# mode.txt holds the value of APP_MODE.
mkdir -p /logs/verifier
check() {
  [ -f /workspace/mode.txt ] || return 1
  [ "$(cat /workspace/mode.txt)" = "staging-eu-7" ] && [ "$(wc -l < /workspace/mode.txt)" -le 1 ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
