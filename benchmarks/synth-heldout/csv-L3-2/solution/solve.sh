#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 1 oasis_wagon.csv > hollow-bakery.csv
)
cd "$WD"
(
tail -n +2 oasis_wagon.csv | sort -t, -k4,4n >> hollow-bakery.csv
)
cd "$WD"
