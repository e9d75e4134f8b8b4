#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -n '6,18p' 'köln_helmet.txt' > saddle_shore.txt
)
cd "$WD"
