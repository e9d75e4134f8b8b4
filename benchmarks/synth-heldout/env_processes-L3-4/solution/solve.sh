#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./flag18.sh
)
cd "$WD"
(
source ./prod.env && ./flag18.sh > mantle65.txt
)
cd "$WD"
