#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir prague
)
cd "$WD"
(
find 'brûlée canyon' -name '*.csv' -exec cp {} prague/ \;
)
cd "$WD"
