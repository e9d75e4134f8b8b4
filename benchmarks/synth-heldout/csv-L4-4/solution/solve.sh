#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 3 people.csv thicket54.csv
)
cd "$WD"
(
awk -F, 'NR == FNR {n[$1] = $2; next} FNR > 1 {print n[$1] "," $2}' people.csv thicket54.csv | sort > thistle74.csv
)
cd "$WD"
