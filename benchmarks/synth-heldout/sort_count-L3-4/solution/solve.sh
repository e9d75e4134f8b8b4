#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sort -rn 'rainbow (6).txt' | head -n 4 > 'fancy lighthouse.txt'
)
cd "$WD"
