#!/bin/bash
# config.bak/ is an exact copy of the original tree; config/ lost exactly its *.tmp files.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  [ -d config.bak ] && [ -d config ] || return 1
  diff -r config.bak /tests/expected/config.bak >/dev/null || return 1
  diff -r config /tests/expected/config >/dev/null || return 1
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
