#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
grep -cw mirror lively_cloud.txt > swamp73.txt
)
cd "$WD"
