#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir nest
)
cd "$WD"
