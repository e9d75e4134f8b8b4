#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
env -i ./'gravel (3).sh' > thistle3.txt
)
cd "$WD"
