#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat glacier25.sh
)
cd "$WD"
(
sed -i 's/compass15.txt/compass15.dat/' glacier25.sh
)
cd "$WD"
