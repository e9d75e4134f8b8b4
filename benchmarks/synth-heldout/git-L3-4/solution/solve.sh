#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git add sunny_pine.py yarrow_pocket.txt
)
cd "$WD"
(
git commit -m 'Remove vivid basket'
)
cd "$WD"
