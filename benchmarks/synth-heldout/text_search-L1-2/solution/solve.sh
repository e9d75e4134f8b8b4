#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
grep -c WARN azure-mountain.log > warn_count.txt
)
cd "$WD"
