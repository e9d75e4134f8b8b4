#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 1 lively-kettle.csv > dusty-lantern.txt
)
cd "$WD"
