#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
echo 'wc -l < quick-apron.txt' > needle_hammer.sh
)
cd "$WD"
