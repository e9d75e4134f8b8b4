#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sort 'tête bench.txt' | uniq -c | sort -rn | head -n 1
)
cd "$WD"
(
echo cairo > 'sleepy kernel łódź.txt'
)
cd "$WD"
