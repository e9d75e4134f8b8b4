#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 1 'west castle piñata.csv'
)
cd "$WD"
(
awk -F, 'NR > 1 {s += $3} END {print s}' 'west castle piñata.csv' > nimble-lantern.txt
)
cd "$WD"
