#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./'pale rocket.sh' > stdout.txt 2> stderr.txt
)
cd "$WD"
