#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
grep -n glacier pocket_ravine.txt | cut -d: -f1 > ballad20.txt
)
cd "$WD"
