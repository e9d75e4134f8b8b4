#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git log -S plaza_709 --format=%s > vault17.txt
)
cd "$WD"
