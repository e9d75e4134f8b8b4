#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
grep -c auth keen_gravel.log > auth_count.txt
)
cd "$WD"
