#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find storage -type f -name 'tmp*' -delete
)
cd "$WD"
