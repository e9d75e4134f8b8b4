#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sort 'azure velvet.txt' | uniq -c | sort -rn | head -n 1
)
cd "$WD"
(
echo taipei > 'blanket (7).txt'
)
cd "$WD"
