#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls passionfruit
)
cd "$WD"
(
cat passionfruit/*.log | grep -c ERR922 > spare_voyage.txt
)
cd "$WD"
