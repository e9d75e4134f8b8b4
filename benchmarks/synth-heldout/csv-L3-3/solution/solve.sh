#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 1 'clever locket naïve.csv' > emerald-lemon.csv
)
cd "$WD"
(
tail -n +2 'clever locket naïve.csv' | sort -t, -k2,2n >> emerald-lemon.csv
)
cd "$WD"
