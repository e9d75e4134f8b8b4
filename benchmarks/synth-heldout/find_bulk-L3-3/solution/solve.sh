#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find quarry -type f -size +16k | sort > tidy-shore.txt
)
cd "$WD"
