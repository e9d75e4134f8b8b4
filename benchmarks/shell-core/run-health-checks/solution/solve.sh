#!/bin/bash
cd /workspace
export LC_ALL=C
: > results.txt
for f in checks/*.sh; do
  bash "$f" >/dev/null 2>&1
  rc=$?
  echo "$(basename "$f") $rc" >> results.txt
done
