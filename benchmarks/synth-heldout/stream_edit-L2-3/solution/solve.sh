#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/^debug=.*/debug=55189/' proud_locket.ini
)
cd "$WD"
