#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
echo 'apple budapest olive' > granite_lagoon.txt
)
cd "$WD"
