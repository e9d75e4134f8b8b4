#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find yarrow -type f -name 'tmp*' | sort > sandy-walnut.txt
)
cd "$WD"
