#!/bin/bash
# Exactly the first-by-path file of each duplicate group survives; folders remain.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  diff <(find photos -mindepth 1 | LC_ALL=C sort) /tests/expected_tree.txt >/dev/null || return 1
  [ "$(cat 'photos/phone backup/IMG_0002 (1).jpg')" = PIC-cake ] && [ "$(cat photos/2020/Dog.jpg)" = PIC-dog ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
