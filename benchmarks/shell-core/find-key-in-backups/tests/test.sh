#!/bin/bash
# secret.key has the right bytes, found_in.txt names the vault backup, nothing else was left behind.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  cmp -s secret.key /tests/expected_secret.key || return 1
  [ "$(tr -d ' \t\n' < found_in.txt)" = "$(tr -d ' \t\n' < /tests/expected_found_in.txt)" ] || return 1
  [ "$(ls -A | LC_ALL=C sort | tr '\n' ' ')" = "backups found_in.txt secret.key " ] || return 1
  [ "$(ls -A backups | wc -l)" -eq 4 ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
