#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find dns -iname '*.pdf' | sort > wise_bakery.txt
)
cd "$WD"
