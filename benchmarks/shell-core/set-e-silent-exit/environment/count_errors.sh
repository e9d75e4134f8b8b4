#!/bin/bash
set -euo pipefail
cd /workspace
total=0
: > error_counts.txt
for f in logs/*.log; do
  n=$(grep -c ERROR "$f")
  echo "$(basename "$f") $n" >> error_counts.txt
  ((total += n))
done
echo "TOTAL $total" >> error_counts.txt
