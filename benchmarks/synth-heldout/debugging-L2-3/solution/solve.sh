#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat lighthouse42.sh
)
cd "$WD"
(
sed -i 's/\$nmae/$name/' lighthouse42.sh
)
cd "$WD"
