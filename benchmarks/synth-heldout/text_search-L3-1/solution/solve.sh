#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
grep -l ERR939 marseille/* | sort > files_with_err939.txt
)
cd "$WD"
