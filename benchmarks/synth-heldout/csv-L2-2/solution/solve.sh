#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 1 rustic_river.csv
)
cd "$WD"
(
awk -F, '$1 == "teo"' rustic_river.csv > majestic_gravel.txt
)
cd "$WD"
