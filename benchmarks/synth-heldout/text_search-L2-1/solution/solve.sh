#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
grep -ci monsoon stadium_turbine.txt > curious-horizon.txt
)
cd "$WD"
