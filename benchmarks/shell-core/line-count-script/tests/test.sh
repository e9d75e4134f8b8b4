#!/bin/bash
# Run count_lines.sh on fresh files (spaces, no final newline, empty file) and compare.
mkdir -p /logs/verifier
check() {
  [ -x /workspace/count_lines.sh ] || return 1
  d=$(mktemp -d)
  printf 'one\ntwo\n' > "$d/two lines.txt"
  printf 'x\ny\nz' > "$d/no-final-newline"
  : > "$d/empty"
  seq 1 1500 > "$d/big.txt"
  got=$(cd "$d" && /workspace/count_lines.sh "two lines.txt" no-final-newline empty "$d/big.txt" /workspace/sample.txt)
  want=$(printf '2 two lines.txt\n2 no-final-newline\n0 empty\n1500 %s\n3 /workspace/sample.txt' "$d/big.txt")
  rm -rf "$d"
  [ "$got" = "$want" ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
