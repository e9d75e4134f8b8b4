#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
command -v find > eager-velvet.txt
)
cd "$WD"
