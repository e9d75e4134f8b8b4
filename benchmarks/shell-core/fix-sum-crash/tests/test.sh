#!/bin/bash
# total.py gives the right sum on the task data and on fresh files.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  [ "$(/usr/bin/python3 total.py numbers.txt 2>/dev/null)" = 144 ] || return 1
  d=$(mktemp -d)
  printf '\n\n 1\n2\n\n\t3\t\n-10\n' > "$d/a.txt"
  printf '5' > "$d/b.txt"
  printf '' > "$d/c.txt"
  [ "$(/usr/bin/python3 total.py "$d/a.txt" 2>/dev/null)" = -4 ] || return 1
  [ "$(/usr/bin/python3 total.py "$d/b.txt" 2>/dev/null)" = 5 ] || return 1
  [ "$(/usr/bin/python3 total.py "$d/c.txt" 2>/dev/null)" = 0 ] || return 1
  rm -rf "$d"
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
