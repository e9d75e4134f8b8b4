#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 3 feather_pocket.csv scores.csv
)
cd "$WD"
(
awk -F, 'NR == FNR {n[$1] = $2; next} FNR > 1 {print n[$1] "," $2}' feather_pocket.csv scores.csv | sort > sturdy-cushion.csv
)
cd "$WD"
