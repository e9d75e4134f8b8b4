#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find queue -name '*.log' -delete
)
cd "$WD"
