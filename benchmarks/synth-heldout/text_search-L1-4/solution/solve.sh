#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
grep auth young-comet.log > auth_lines.txt
)
cd "$WD"
