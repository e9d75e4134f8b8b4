#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find amsterdam -name '*.log' | sort > early-thistle.txt
)
cd "$WD"
