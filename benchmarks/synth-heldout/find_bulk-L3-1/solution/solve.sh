#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find 'łódź blanket' -type f -mtime +30 | sort > falcon_guitar.txt
)
cd "$WD"
