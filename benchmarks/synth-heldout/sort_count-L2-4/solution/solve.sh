#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sort -n pale_cottage.txt > serene-pocket.txt
)
cd "$WD"
