#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i '/bench/d' panel24.txt
)
cd "$WD"
