#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sort -rn 'piñata saddle.txt' | head -n 2 > 'málaga ballad.txt'
)
cd "$WD"
