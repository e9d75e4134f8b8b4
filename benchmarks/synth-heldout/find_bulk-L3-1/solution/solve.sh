#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find 'łódź blanket' -type f -mtime +30 | sort > floral-guitar.txt
)
cd "$WD"
