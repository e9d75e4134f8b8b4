#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/wcc/wc/' quiet-castle.sh
)
cd "$WD"
