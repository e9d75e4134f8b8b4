#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 3 access_65.log
)
cd "$WD"
(
grep '" 500 ' access_65.log | cut -d' ' -f1 | sort -u > giant_harvest.txt
)
cd "$WD"
