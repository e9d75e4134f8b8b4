#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find 'engine (5)' -iname '*.jpg' | sort > fossil12.txt
)
cd "$WD"
