#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find storage -name '*.log' -delete
)
cd "$WD"
