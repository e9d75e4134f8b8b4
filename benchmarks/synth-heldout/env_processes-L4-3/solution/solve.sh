#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
env -i ./rapid-budget.sh > topaz-spruce.txt
)
cd "$WD"
