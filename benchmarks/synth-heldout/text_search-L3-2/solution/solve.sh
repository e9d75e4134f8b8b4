#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
grep -l CODE343 blueberry/* | sort > files_with_code343.txt
)
cd "$WD"
