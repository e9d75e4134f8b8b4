#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tail -n 5 spare_orbit.log > ballad48.txt
)
cd "$WD"
