#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 1 'capsule (3).csv'
)
cd "$WD"
(
awk -F, 'NR > 1 {s += $3} END {print s}' 'capsule (3).csv' > comet76.txt
)
cd "$WD"
