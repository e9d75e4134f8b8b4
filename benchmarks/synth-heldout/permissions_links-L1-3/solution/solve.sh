#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
chmod +x bracket_castle.sh
)
cd "$WD"
