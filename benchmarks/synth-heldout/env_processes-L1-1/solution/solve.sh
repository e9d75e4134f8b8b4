#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
command -v gzip > swift_shelter.txt
)
cd "$WD"
