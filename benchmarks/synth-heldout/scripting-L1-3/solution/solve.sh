#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
echo "echo 'good morning emma'" > green_scroll.sh
)
cd "$WD"
