#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find strawberry -type f -size +16k | sort > capsule_desert.txt
)
cd "$WD"
