#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
echo "echo 'hello arjun'" > flag55.sh
)
cd "$WD"
