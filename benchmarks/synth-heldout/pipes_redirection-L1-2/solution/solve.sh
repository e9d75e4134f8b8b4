#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tail -n 3 orange-archive.log > temple51.txt
)
cd "$WD"
