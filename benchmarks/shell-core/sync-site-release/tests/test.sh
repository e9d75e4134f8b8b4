#!/bin/bash
# site-live mirrors site-build plus the untouched uploads/ (including its empty tmp/ folder).
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  diff -r site-build /tests/expected/site-build >/dev/null || return 1
  [ -d site-live/uploads/tmp ] && [ -z "$(ls -A site-live/uploads/tmp)" ] || return 1
  diff -r site-live /tests/expected/site-live -x tmp >/dev/null || return 1
  # no leftover directories outside uploads/
  [ -z "$(cd site-live && find . -path ./uploads -prune -o -type d -empty -print)" ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
