#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 1 'fjörd_ember.csv'
)
cd "$WD"
(
tail -n +2 'fjörd_ember.csv' | cut -d, -f5 | sort -u > summit67.csv
)
cd "$WD"
