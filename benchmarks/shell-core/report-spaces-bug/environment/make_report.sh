#!/bin/bash
# Writes report.txt: one line per file in data/, "<name>: <lines> lines", sorted by name.
cd /workspace
: > report.txt
for f in $(ls data); do
  n=$(wc -l < data/$f)
  echo "$f: $n lines" >> report.txt
done
