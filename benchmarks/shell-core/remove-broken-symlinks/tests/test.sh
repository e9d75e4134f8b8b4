#!/bin/bash
# broken_links.txt lists the dangling links; they are gone; good links and files remain.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  [ -f broken_links.txt ] || return 1
  diff <(cat broken_links.txt; [ -n "$(tail -c1 broken_links.txt)" ] && echo) /tests/expected_broken.txt >/dev/null || return 1
  diff <(find app -type l -printf '%p -> %l\n' | LC_ALL=C sort) /tests/expected_links.txt >/dev/null || return 1
  [ "$(find app -type f | wc -l)" -eq 4 ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
