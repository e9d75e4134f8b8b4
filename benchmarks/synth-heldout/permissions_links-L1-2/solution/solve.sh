#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
chmod +x cellar71.sh
)
cd "$WD"
