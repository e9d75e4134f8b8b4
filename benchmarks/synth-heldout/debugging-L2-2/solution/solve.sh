#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat grand_voyage.sh
)
cd "$WD"
(
sed -i 's/bronze_dock.txt/bronze_dock.csv/' grand_voyage.sh
)
cd "$WD"
